//! PostgreSQL for Sluice: a sink that appends (binary `COPY`, two-phase commit) or upserts by
//! primary key, batched and flushed at every checkpoint.

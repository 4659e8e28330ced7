//! Built-in sinks: the ends of chains. Each is a [`Collector`](sluice_types::Collector).

mod collect;
mod discard;
mod file;
mod func;
pub mod partition_commit;
mod partitioned;
mod print;
mod transactional;

pub use collect::{CollectHandle, CollectSink};
pub use discard::{DiscardHandle, DiscardSink};
pub use file::{part_path, TextFileSink};
pub use func::FnSink;
pub use partitioned::{PartitionFormat, PartitionedFileSink, RollingPolicy};
pub use print::PrintSink;
pub use transactional::{committed_lines, TransactionalFileSink};

//! Where a job's subtasks run when it is split over processes ([`Placement`]), and how records
//! of a type cross between them (`WireOps`).
//!
//! Every process builds the same job graph (no code is shipped: timely-dataflow's model) and
//! runs only the subtasks placed on it. Placement follows Flink's slot sharing: subtask `k` of
//! every vertex goes into slot `k`, and the slots fill the processes in order, `S` per process
//! with `S = ⌈max parallelism of the job's vertices ÷ processes⌉` (Flink's default of filling a
//! TaskManager's slots before the next). A channel whose two ends are on different processes
//! goes over the processes' [`NetEndpoint`] (credit-based, see `sluice-net`); the others stay
//! in-process gates, as in a single process.

use std::any::{Any, TypeId};
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_channel::{ChannelSender, GateCanceller};
use sluice_net::{ChannelId, NetEndpoint, NetError, SerdeMetrics};
use sluice_runtime::checkpoint::task::ChannelStateCodec;
use sluice_types::Data;

use crate::typeops::AnyBox;

/// This process's part of a job run over several processes.
#[derive(Clone, Debug)]
pub struct Placement {
    /// This process's index, `0..processes`.
    pub process: usize,
    /// How many processes the job is split over; each runs the same job with its own `process`.
    pub processes: usize,
    /// The connections to the other processes.
    pub endpoint: NetEndpoint,
}

impl Placement {
    /// Slots per process for a job whose widest vertex has `max_parallelism` subtasks.
    pub fn slots_per_process(&self, max_parallelism: usize) -> usize {
        max_parallelism.div_ceil(self.processes.max(1)).max(1)
    }

    /// The process subtask `k` runs on (its slot's), given the slots per process.
    pub fn process_of(&self, subtask: usize, slots: usize) -> usize {
        (subtask / slots.max(1)).min(self.processes.saturating_sub(1))
    }
}

/// Opens the remote ends of channels of one record type (type-erased, as [`crate::typeops`]).
pub(crate) trait WireOps: Send + Sync {
    /// Feeds the gate channels `channels` (their senders, boxed `ChannelSender<T>`) from
    /// `process`.
    fn open_inputs(
        &self,
        endpoint: &NetEndpoint,
        process: usize,
        channels: Vec<(ChannelId, AnyBox)>,
        exclusive: usize,
        metrics: Arc<SerdeMetrics>,
    ) -> Result<(), NetError>;

    /// Senders (boxed `ChannelSender<T>`, in the order of `channels`) whose buffers go to
    /// `process`, and their outbox's canceller (for the job's cancellation).
    fn open_outputs(
        &self,
        endpoint: &NetEndpoint,
        process: usize,
        channels: Vec<ChannelId>,
        metrics: Arc<SerdeMetrics>,
    ) -> Result<(Vec<AnyBox>, GateCanceller), NetError>;

    /// The codec of an unaligned checkpoint's in-flight records of this type (postcard
    /// `Vec<T>`, as on the wire).
    fn channel_codec(&self) -> Arc<dyn ChannelStateCodec>;
}

/// In-flight records of type `T` in an unaligned checkpoint: a postcard `Vec<T>`.
struct PostcardRecords<T>(PhantomData<fn() -> T>);

impl<T: Data + Serialize + DeserializeOwned> ChannelStateCodec for PostcardRecords<T> {
    fn encode(&self, records: &(dyn Any + Send)) -> Result<Vec<u8>, String> {
        let records = records.downcast_ref::<Vec<T>>().ok_or_else(|| {
            format!(
                "in-flight records are not of type {}",
                std::any::type_name::<T>()
            )
        })?;
        postcard::to_allocvec(records).map_err(|e| e.to_string())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn Any + Send>, String> {
        let records: Vec<T> = postcard::from_bytes(bytes)
            .map_err(|e| format!("not a postcard list of {}: {e}", std::any::type_name::<T>()))?;
        Ok(Box::new(records))
    }
}

struct WireOpsImpl<T>(PhantomData<fn() -> T>);

/// The wire operations of records of type `T` (postcard-encoded, see `sluice-net`).
pub(crate) fn wire_ops<T: Data + Serialize + DeserializeOwned>() -> (TypeId, Arc<dyn WireOps>) {
    (TypeId::of::<T>(), Arc::new(WireOpsImpl::<T>(PhantomData)))
}

impl<T: Data + Serialize + DeserializeOwned> WireOps for WireOpsImpl<T> {
    fn open_inputs(
        &self,
        endpoint: &NetEndpoint,
        process: usize,
        channels: Vec<(ChannelId, AnyBox)>,
        exclusive: usize,
        metrics: Arc<SerdeMetrics>,
    ) -> Result<(), NetError> {
        let mut typed = Vec::with_capacity(channels.len());
        for (id, s) in channels {
            let s = s.downcast::<ChannelSender<T>>().map_err(|_| {
                NetError::Config(format!(
                    "channel {id:?}: its gate is not of record type {}",
                    std::any::type_name::<T>()
                ))
            })?;
            typed.push((id, *s));
        }
        sluice_net::open_inputs(endpoint, process, typed, exclusive, metrics)
    }

    fn open_outputs(
        &self,
        endpoint: &NetEndpoint,
        process: usize,
        channels: Vec<ChannelId>,
        metrics: Arc<SerdeMetrics>,
    ) -> Result<(Vec<AnyBox>, GateCanceller), NetError> {
        // The pump thread ends by itself at the end of every channel (or when cancelled).
        let (senders, _pump, canceller) =
            sluice_net::open_outputs_cancellable::<T>(endpoint, process, channels, metrics)?;
        Ok((
            senders.into_iter().map(|s| Box::new(s) as AnyBox).collect(),
            canceller,
        ))
    }

    fn channel_codec(&self) -> Arc<dyn ChannelStateCodec> {
        Arc::new(PostcardRecords::<T>(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(processes: usize) -> Placement {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let endpoint =
            NetEndpoint::start(0, &[addr], l, std::time::Duration::from_secs(1)).unwrap();
        Placement {
            process: 0,
            processes,
            endpoint,
        }
    }

    #[test]
    fn slots_fill_the_processes_in_order() {
        let p = placement(2);
        let slots = p.slots_per_process(4);
        assert_eq!(slots, 2);
        let of: Vec<usize> = (0..4).map(|k| p.process_of(k, slots)).collect();
        assert_eq!(of, vec![0, 0, 1, 1]);
        // A narrower vertex's subtasks take the first slots.
        assert_eq!(p.process_of(0, slots), 0);
        // Parallelism 3 over 2 processes: 2 slots each, the last half empty.
        let slots = p.slots_per_process(3);
        let of: Vec<usize> = (0..3).map(|k| p.process_of(k, slots)).collect();
        assert_eq!(of, vec![0, 0, 1]);
    }
}

//! The handle through which an operator reaches the services of the task running it.

use std::any::Any;
use std::sync::Arc;

/// The services of the task that runs an operator (in Sluice: checkpoint reporting, restore
/// data and the subtask's metrics, e.g. the hot-key slot), carried in the
/// [`OperatorContext`](crate::OperatorContext) so an operator depends on the task it belongs
/// to, never on which thread calls it.
///
/// This crate knows no runtime types, so the handle is opaque here: the runtime puts its
/// services object in with [`ServicesHandle::new`] and reads it back, typed, with
/// [`ServicesHandle::get`] (`sluice_runtime::TaskServices::of(ctx)`). An operator built outside
/// a task (a unit test driving it by hand) gets the empty handle: no checkpoints, no metrics.
#[derive(Clone, Default)]
pub struct ServicesHandle(Option<Arc<dyn Any + Send + Sync>>);

impl ServicesHandle {
    /// A handle on `services`.
    pub fn new<S: Any + Send + Sync>(services: Arc<S>) -> ServicesHandle {
        ServicesHandle(Some(services))
    }

    /// The handle of an operator that runs outside any task.
    pub fn none() -> ServicesHandle {
        ServicesHandle(None)
    }

    /// The services, if the handle holds services of type `S`.
    pub fn get<S: Any>(&self) -> Option<&S> {
        self.0.as_ref()?.downcast_ref::<S>()
    }

    /// Whether the handle holds any services.
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }
}

impl std::fmt::Debug for ServicesHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ServicesHandle(task)"
        } else {
            "ServicesHandle(none)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_back_the_services_of_their_own_type_only() {
        struct Mine(u32);
        let h = ServicesHandle::new(Arc::new(Mine(7)));
        assert_eq!(h.get::<Mine>().map(|m| m.0), Some(7));
        assert!(h.get::<String>().is_none());
        assert!(ServicesHandle::none().get::<Mine>().is_none());
        assert!(!ServicesHandle::default().is_some());
    }
}

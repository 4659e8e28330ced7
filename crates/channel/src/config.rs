/// Buffer and credit sizes of an exchange (Flink's defaults: 32 KiB buffers, 2 exclusive buffers
/// per channel, 8 floating buffers per gate, 5 overdraft buffers per output gate, no debloating).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeConfig {
    /// Target buffer size in bytes; a buffer holds `buffer_bytes / size_of::<T>()` records (≥ 1).
    pub buffer_bytes: usize,
    /// Credits each channel owns.
    pub exclusive_credits: usize,
    /// Credits shared by all channels of a gate.
    pub floating_credits: usize,
    /// `taskmanager.network.memory.max-overdraft-buffers-per-gate`: buffers a writer may ship
    /// without credit while it is in the middle of one input record's outputs.
    pub max_overdraft_buffers: usize,
    /// Buffer debloating (`taskmanager.network.memory.buffer-debloat.*`).
    pub debloat: crate::DebloatConfig,
}

impl Default for ExchangeConfig {
    fn default() -> Self {
        ExchangeConfig {
            buffer_bytes: 32 * 1024,
            exclusive_credits: 2,
            floating_credits: 8,
            max_overdraft_buffers: 5,
            debloat: crate::DebloatConfig::default(),
        }
    }
}

impl ExchangeConfig {
    /// Records per buffer for record type `T`.
    pub fn records_per_buffer<T>(&self) -> usize {
        (self.buffer_bytes / sluice_types::estimated_record_size::<T>()).max(1)
    }

    /// Rejects configurations that could deadlock or make no sense, naming the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.buffer_bytes == 0 {
            return Err("buffer size must be at least 1 byte".into());
        }
        if self.exclusive_credits + self.floating_credits == 0 {
            return Err(
                "credits: exclusive-per-channel + floating-per-gate must be at least 1".into(),
            );
        }
        if self.debloat.enabled {
            self.debloat.validate(self.buffer_bytes)?;
        }
        Ok(())
    }
}

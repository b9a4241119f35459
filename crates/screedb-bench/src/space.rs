//! Space amplification sampled while a write workload runs (`--space_sample_secs`): every few
//! seconds, the bytes the database directory occupies over the bytes of its live keys and
//! values. The value at the end of a workload misses the peaks in between (a rewrite's input
//! and output trees both on disk, garbage that grows until a merge); the Jungle paper plots
//! these samples over time.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use crate::live::LiveKeys;
use crate::sysinfo::disk_usage;

/// What one sample needs: the directory, the live keys, and the sizes of a key and a value.
#[derive(Debug, Clone, Copy)]
pub struct SpaceProbe<'a> {
    /// The database directory.
    pub dir: &'a Path,
    /// Its live keys.
    pub live: &'a LiveKeys,
    /// Bytes of a db_bench key.
    pub key_size: usize,
    /// Bytes of a YCSB key.
    pub ycsb_key_size: usize,
    /// Mean bytes of a value.
    pub value_size: usize,
}

impl SpaceProbe<'_> {
    /// Disk bytes over live bytes now; `None` while nothing is known to be live.
    pub fn sample(&self) -> Option<f64> {
        let live = self
            .live
            .user_bytes(self.key_size, self.ycsb_key_size, self.value_size)?;
        (live > 0).then(|| disk_usage(self.dir) as f64 / live as f64)
    }
}

/// Runs `work` while a scoped thread samples `probe` every `every` (and once more at the end);
/// returns what `work` returned and the samples, oldest first. `None` for `every` runs `work`
/// alone.
pub fn sampled<T>(
    probe: SpaceProbe<'_>,
    every: Option<Duration>,
    work: impl FnOnce() -> T,
) -> (T, Vec<f64>) {
    let Some(every) = every else {
        return (work(), Vec::new());
    };
    std::thread::scope(|s| {
        let (stop, stopped) = mpsc::channel::<()>();
        let sampler = s.spawn(move || {
            let mut samples = Vec::new();
            // Until `stop` is dropped: a sample each time the wait times out.
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                samples.extend(probe.sample());
            }
            samples.extend(probe.sample());
            samples
        });
        let out = work();
        drop(stop);
        let samples = sampler.join().unwrap_or_default();
        (out, samples)
    })
}

/// The mean and the largest of `samples`; `None` when there are none.
pub fn mean_and_max(samples: &[f64]) -> Option<(f64, f64)> {
    if samples.is_empty() {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    let max = samples.iter().copied().fold(f64::MIN, f64::max);
    Some((mean, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_track_the_directory_while_the_work_runs() {
        let dir = tempfile::tempdir().unwrap();
        let live = LiveKeys::new(100);
        for k in 0..100 {
            live.put(k);
        }
        let probe = SpaceProbe {
            dir: dir.path(),
            live: &live,
            key_size: 16,
            ycsb_key_size: 23,
            value_size: 84,
        };
        // 100 keys of 100 bytes live; the work writes 40 KiB, then 80 KiB.
        let (n, samples) = sampled(probe, Some(Duration::from_millis(20)), || {
            std::fs::write(dir.path().join("a"), vec![1u8; 40 << 10]).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            std::fs::write(dir.path().join("b"), vec![1u8; 40 << 10]).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            7
        });
        assert_eq!(n, 7);
        assert!(samples.len() >= 4, "{samples:?}");
        let (mean, max) = mean_and_max(&samples).unwrap();
        // 80 KiB over 10,000 live bytes at the end (allocated blocks may round up).
        assert!(max >= 8.0, "{samples:?}");
        assert!(
            mean < max,
            "the early samples saw half the bytes: {samples:?}"
        );
        assert!(samples.first().unwrap() < samples.last().unwrap());
    }

    #[test]
    fn no_interval_takes_no_samples() {
        let dir = tempfile::tempdir().unwrap();
        let live = LiveKeys::new(1);
        let probe = SpaceProbe {
            dir: dir.path(),
            live: &live,
            key_size: 16,
            ycsb_key_size: 23,
            value_size: 84,
        };
        let ((), samples) = sampled(probe, None, || ());
        assert!(samples.is_empty());
        assert_eq!(mean_and_max(&samples), None);
    }
}

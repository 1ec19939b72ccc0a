//! The thread-pool events of provider Microsoft-Windows-DotNETRuntime
//! (keyword 0x10000, Threading), decoded from their payloads.
//!
//! IDs and field layouts are those of dotnet/runtime's
//! `NativeRuntimeEventSource.Threading.cs` (the managed portable pool, .NET
//! 6+) and `src/coreclr/vm/ClrEtwAll.man` (the native pool, and the native
//! sinks the portable pool writes through on CoreCLR):
//!
//! | id | event | payload |
//! |---|---|---|
//! | 50 | ThreadPoolWorkerThreadStart | u32 ActiveWorkerThreadCount, u32 RetiredWorkerThreadCount, u16 ClrInstanceID |
//! | 51 | ThreadPoolWorkerThreadStop | same |
//! | 57 | ThreadPoolWorkerThreadWait | same |
//! | 54 | ThreadPoolWorkerThreadAdjustmentSample | f64 Throughput, u16 ClrInstanceID |
//! | 55 | ThreadPoolWorkerThreadAdjustmentAdjustment | f64 AverageThroughput, u32 NewWorkerThreadCount, u32 Reason, u16 ClrInstanceID |
//! | 56 | ThreadPoolWorkerThreadAdjustmentStats | f64 × 9 (Duration, Throughput, ThreadWave, ThroughputWave, ThroughputErrorEstimate, AverageThroughputErrorEstimate, ThroughputRatio, Confidence, NewControlSetting), u16 NewThreadWaveMagnitude, u16 ClrInstanceID |
//! | 59 | ThreadPoolMinMaxThreads | u16 MinWorkerThreads, u16 MaxWorkerThreads, u16 MinIOCompletionThreads, u16 MaxIOCompletionThreads, u16 ClrInstanceID |
//! | 60 | ThreadPoolWorkingThreadCount | u32 Count, u16 ClrInstanceID |
//! | 61 | ThreadPoolEnqueue | pointer WorkID, u16 ClrInstanceID |
//! | 62 | ThreadPoolDequeue | pointer WorkID, u16 ClrInstanceID |
//!
//! A payload longer than the layout (a later event version appending
//! fields) decodes; a shorter one does not (the event is counted and
//! skipped). A missing trailing ClrInstanceID is tolerated.
//!
//! # Work items (.NET 6+)
//!
//! The portable pool does not write 61/62. Its managed queue,
//! `ThreadPoolWorkQueue` (dotnet/runtime
//! `src/libraries/System.Private.CoreLib/src/System/Threading/ThreadPoolWorkQueue.cs`),
//! logs every item through `FrameworkEventSource` (same repository,
//! `.../System/Diagnostics/Tracing/FrameworkEventSource.cs`), provider
//! `System.Diagnostics.Eventing.FrameworkEventSource`, when it is enabled at
//! level Verbose for keyword ThreadPool 0x2 or ThreadTransfer 0x10:
//!
//! | id | event | payload | written |
//! |---|---|---|---|
//! | 30 | ThreadPoolEnqueueWork | i64 workID | `Enqueue`, `EnqueueAtHighPriority` (and again by `TransferLocalWork` when a parked thread hands its local items back) |
//! | 31 | ThreadPoolDequeueWork | i64 workID | `Dispatch`, just before the item runs on the dequeuing thread |
//!
//! The workID is the item object's `GetHashCode()` widened to 64 bits (the
//! source's comment: a hash code, not an address, since objects move; there
//! may be collisions). .NET Framework wrote the object's address instead.
//! No ClrInstanceID follows. These events carry their names in their
//! metadata, but they are matched, like the runtime's, by provider and id.

use std::fmt;

use serde::Serialize;

use super::bytes::Bytes;

/// The provider of the runtime's own events.
pub const DOTNET_RUNTIME_PROVIDER: &str = "Microsoft-Windows-DotNETRuntime";
/// The Threading keyword that enables the thread-pool events.
pub const THREADING_KEYWORD: u64 = 0x10000;
/// The managed provider whose events 30 and 31 are the work items (.NET 6+).
pub const FRAMEWORK_EVENT_SOURCE_PROVIDER: &str =
    "System.Diagnostics.Eventing.FrameworkEventSource";
/// FrameworkEventSource's ThreadPool keyword.
pub const FRAMEWORK_THREAD_POOL_KEYWORD: u64 = 0x2;
/// FrameworkEventSource's ThreadTransfer keyword.
pub const FRAMEWORK_THREAD_TRANSFER_KEYWORD: u64 = 0x10;
/// The `DOTNET_EventPipeConfig` entry that records the work items.
pub const FRAMEWORK_ITEMS_CONFIG: &str = "System.Diagnostics.Eventing.FrameworkEventSource:0x12:5";

pub const EVENT_ENQUEUE_WORK: u32 = 30;
pub const EVENT_DEQUEUE_WORK: u32 = 31;

pub const EVENT_WORKER_THREAD_START: u32 = 50;
pub const EVENT_WORKER_THREAD_STOP: u32 = 51;
pub const EVENT_ADJUSTMENT_SAMPLE: u32 = 54;
pub const EVENT_ADJUSTMENT_ADJUSTMENT: u32 = 55;
pub const EVENT_ADJUSTMENT_STATS: u32 = 56;
pub const EVENT_WORKER_THREAD_WAIT: u32 = 57;
pub const EVENT_MIN_MAX_THREADS: u32 = 59;
pub const EVENT_WORKING_THREAD_COUNT: u32 = 60;
pub const EVENT_ENQUEUE: u32 = 61;
pub const EVENT_DEQUEUE: u32 = 62;

/// True for the DotNETRuntime event ids this module decodes.
pub fn is_pool_event_id(id: u32) -> bool {
    matches!(id, 50 | 51 | 54 | 55 | 56 | 57 | 59 | 60 | 61 | 62)
}

/// True for the FrameworkEventSource event ids this module decodes.
pub fn is_framework_event_id(id: u32) -> bool {
    matches!(id, EVENT_ENQUEUE_WORK | EVENT_DEQUEUE_WORK)
}

/// Why the pool changed its thread-count goal
/// (`ThreadAdjustmentReasonMap` in the runtime).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdjustmentReason {
    Warmup,
    Initializing,
    RandomMove,
    ClimbingMove,
    ChangePoint,
    Stabilizing,
    /// The gate (or starvation) thread saw queued work and no progress.
    Starvation,
    ThreadTimedOut,
    /// The portable pool (.NET 6+) raised the goal for threads blocked in
    /// a cooperative wait (`Task.Wait`, `.Result`).
    CooperativeBlocking,
    /// A value the runtime's map does not have (a newer runtime).
    Other(u32),
}

impl AdjustmentReason {
    pub fn from_code(code: u32) -> Self {
        match code {
            0 => AdjustmentReason::Warmup,
            1 => AdjustmentReason::Initializing,
            2 => AdjustmentReason::RandomMove,
            3 => AdjustmentReason::ClimbingMove,
            4 => AdjustmentReason::ChangePoint,
            5 => AdjustmentReason::Stabilizing,
            6 => AdjustmentReason::Starvation,
            7 => AdjustmentReason::ThreadTimedOut,
            8 => AdjustmentReason::CooperativeBlocking,
            n => AdjustmentReason::Other(n),
        }
    }

    pub fn code(self) -> u32 {
        match self {
            AdjustmentReason::Warmup => 0,
            AdjustmentReason::Initializing => 1,
            AdjustmentReason::RandomMove => 2,
            AdjustmentReason::ClimbingMove => 3,
            AdjustmentReason::ChangePoint => 4,
            AdjustmentReason::Stabilizing => 5,
            AdjustmentReason::Starvation => 6,
            AdjustmentReason::ThreadTimedOut => 7,
            AdjustmentReason::CooperativeBlocking => 8,
            AdjustmentReason::Other(n) => n,
        }
    }

    /// The runtime's name for a known reason, `"Other"` for an unknown one.
    /// The reason as the model's goal changes give it.
    pub fn goal_reason(self) -> crate::trace::GoalReason {
        use crate::trace::GoalReason;
        match self {
            AdjustmentReason::Warmup => GoalReason::Warmup,
            AdjustmentReason::Initializing => GoalReason::Initializing,
            AdjustmentReason::RandomMove => GoalReason::RandomMove,
            AdjustmentReason::ClimbingMove => GoalReason::ClimbingMove,
            AdjustmentReason::ChangePoint => GoalReason::ChangePoint,
            AdjustmentReason::Stabilizing => GoalReason::Stabilizing,
            AdjustmentReason::Starvation => GoalReason::Starvation,
            AdjustmentReason::ThreadTimedOut => GoalReason::ThreadTimedOut,
            AdjustmentReason::CooperativeBlocking => GoalReason::CooperativeBlocking,
            AdjustmentReason::Other(_) => GoalReason::Other,
        }
    }

    pub fn static_name(self) -> &'static str {
        match self {
            AdjustmentReason::Warmup => "Warmup",
            AdjustmentReason::Initializing => "Initializing",
            AdjustmentReason::RandomMove => "RandomMove",
            AdjustmentReason::ClimbingMove => "ClimbingMove",
            AdjustmentReason::ChangePoint => "ChangePoint",
            AdjustmentReason::Stabilizing => "Stabilizing",
            AdjustmentReason::Starvation => "Starvation",
            AdjustmentReason::ThreadTimedOut => "ThreadTimedOut",
            AdjustmentReason::CooperativeBlocking => "CooperativeBlocking",
            AdjustmentReason::Other(_) => "Other",
        }
    }

    /// The runtime's name for the reason (`Reason9` and so on for unknown ones).
    pub fn name(self) -> String {
        match self {
            AdjustmentReason::Other(n) => format!("Reason{n}"),
            known => format!("{known:?}"),
        }
    }

    /// True for the names the runtime defines (0 to 8).
    pub fn is_known(self) -> bool {
        !matches!(self, AdjustmentReason::Other(_))
    }
}

impl fmt::Display for AdjustmentReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for AdjustmentReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// `ThreadPoolWorkerThreadAdjustmentStats`: the hill-climbing state.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AdjustmentStats {
    pub duration: f64,
    pub throughput: f64,
    pub thread_wave: f64,
    pub throughput_wave: f64,
    pub throughput_error_estimate: f64,
    pub average_throughput_error_estimate: f64,
    pub throughput_ratio: f64,
    pub confidence: f64,
    pub new_control_setting: f64,
    pub new_thread_wave_magnitude: u16,
}

/// One decoded thread-pool event.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "event")]
pub enum PoolEvent {
    /// 50: a worker thread started; `active` counts it.
    WorkerThreadStart { active: u32, retired: u32 },
    /// 51: a worker thread exited; `active` no longer counts it.
    WorkerThreadStop { active: u32, retired: u32 },
    /// 57: a worker found no work and waits for some.
    WorkerThreadWait { active: u32, retired: u32 },
    /// 54: a hill-climbing throughput sample.
    AdjustmentSample { throughput: f64 },
    /// 55: the thread-count goal was set to `new_count`.
    Adjustment {
        average_throughput: f64,
        new_count: u32,
        reason: AdjustmentReason,
    },
    /// 56: hill-climbing statistics.
    AdjustmentStats(AdjustmentStats),
    /// 59: the pool's limits.
    MinMaxThreads {
        min_workers: u16,
        max_workers: u16,
        min_io: u16,
        max_io: u16,
    },
    /// 60: threads processing work.
    WorkingThreadCount { count: u32 },
    /// 61: a work item was queued.
    Enqueue { work_id: u64 },
    /// 62: a work item was taken.
    Dequeue { work_id: u64 },
    /// FrameworkEventSource 30: a work item was queued (.NET 6+); the id
    /// is the item's hash code.
    EnqueueWork { work_id: u64 },
    /// FrameworkEventSource 31: a work item is about to run on the thread
    /// of the event.
    DequeueWork { work_id: u64 },
}

impl PoolEvent {
    /// The runtime's event name.
    pub fn name(&self) -> &'static str {
        match self {
            PoolEvent::WorkerThreadStart { .. } => "ThreadPoolWorkerThreadStart",
            PoolEvent::WorkerThreadStop { .. } => "ThreadPoolWorkerThreadStop",
            PoolEvent::WorkerThreadWait { .. } => "ThreadPoolWorkerThreadWait",
            PoolEvent::AdjustmentSample { .. } => "ThreadPoolWorkerThreadAdjustmentSample",
            PoolEvent::Adjustment { .. } => "ThreadPoolWorkerThreadAdjustmentAdjustment",
            PoolEvent::AdjustmentStats(_) => "ThreadPoolWorkerThreadAdjustmentStats",
            PoolEvent::MinMaxThreads { .. } => "ThreadPoolMinMaxThreads",
            PoolEvent::WorkingThreadCount { .. } => "ThreadPoolWorkingThreadCount",
            PoolEvent::Enqueue { .. } => "ThreadPoolEnqueue",
            PoolEvent::Dequeue { .. } => "ThreadPoolDequeue",
            PoolEvent::EnqueueWork { .. } => "ThreadPoolEnqueueWork",
            PoolEvent::DequeueWork { .. } => "ThreadPoolDequeueWork",
        }
    }
}

/// A decoded event with its time and thread.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TimedEvent {
    /// Nanoseconds since the trace's sync time (its start).
    pub time_ns: i64,
    /// The raw QPC timestamp.
    pub qpc: i64,
    /// OS thread id of the thread the event is about.
    pub thread_id: u64,
    /// `None` when the payload stops before the ClrInstanceID field.
    pub clr_instance_id: Option<u16>,
    #[serde(flatten)]
    pub event: PoolEvent,
}

/// Decodes the payload of DotNETRuntime event `event_id`; `None` if the id
/// is not a thread-pool event or the payload is too short.
pub fn decode_pool_event(
    event_id: u32,
    payload: &[u8],
    pointer_size: u32,
) -> Option<(PoolEvent, Option<u16>)> {
    let mut b = Bytes::new(payload);
    let event = match event_id {
        EVENT_WORKER_THREAD_START | EVENT_WORKER_THREAD_STOP | EVENT_WORKER_THREAD_WAIT => {
            let active = b.u32()?;
            let retired = b.u32()?;
            match event_id {
                EVENT_WORKER_THREAD_START => PoolEvent::WorkerThreadStart { active, retired },
                EVENT_WORKER_THREAD_STOP => PoolEvent::WorkerThreadStop { active, retired },
                _ => PoolEvent::WorkerThreadWait { active, retired },
            }
        }
        EVENT_ADJUSTMENT_SAMPLE => PoolEvent::AdjustmentSample {
            throughput: b.f64()?,
        },
        EVENT_ADJUSTMENT_ADJUSTMENT => {
            let average_throughput = b.f64()?;
            let new_count = b.u32()?;
            let reason = AdjustmentReason::from_code(b.u32()?);
            PoolEvent::Adjustment {
                average_throughput,
                new_count,
                reason,
            }
        }
        EVENT_ADJUSTMENT_STATS => PoolEvent::AdjustmentStats(AdjustmentStats {
            duration: b.f64()?,
            throughput: b.f64()?,
            thread_wave: b.f64()?,
            throughput_wave: b.f64()?,
            throughput_error_estimate: b.f64()?,
            average_throughput_error_estimate: b.f64()?,
            throughput_ratio: b.f64()?,
            confidence: b.f64()?,
            new_control_setting: b.f64()?,
            new_thread_wave_magnitude: b.u16()?,
        }),
        EVENT_MIN_MAX_THREADS => PoolEvent::MinMaxThreads {
            min_workers: b.u16()?,
            max_workers: b.u16()?,
            min_io: b.u16()?,
            max_io: b.u16()?,
        },
        EVENT_WORKING_THREAD_COUNT => PoolEvent::WorkingThreadCount { count: b.u32()? },
        EVENT_ENQUEUE => PoolEvent::Enqueue {
            work_id: b.pointer(pointer_size)?,
        },
        EVENT_DEQUEUE => PoolEvent::Dequeue {
            work_id: b.pointer(pointer_size)?,
        },
        _ => return None,
    };
    Some((event, b.u16()))
}

/// Decodes the payload of FrameworkEventSource event `event_id`; `None` if
/// the id is not 30 or 31 or the payload is shorter than its i64.
pub fn decode_framework_event(event_id: u32, payload: &[u8]) -> Option<PoolEvent> {
    let mut b = Bytes::new(payload);
    let work_id = b.u64()?;
    match event_id {
        EVENT_ENQUEUE_WORK => Some(PoolEvent::EnqueueWork { work_id }),
        EVENT_DEQUEUE_WORK => Some(PoolEvent::DequeueWork { work_id }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip() {
        let names = [
            "Warmup",
            "Initializing",
            "RandomMove",
            "ClimbingMove",
            "ChangePoint",
            "Stabilizing",
            "Starvation",
            "ThreadTimedOut",
            "CooperativeBlocking",
        ];
        for (code, name) in names.iter().enumerate() {
            let r = AdjustmentReason::from_code(code as u32);
            assert_eq!(r.name(), *name);
            assert_eq!(r.code(), code as u32);
            assert!(r.is_known());
        }
        assert_eq!(AdjustmentReason::from_code(9).name(), "Reason9");
        assert!(!AdjustmentReason::from_code(9).is_known());
    }

    #[test]
    fn decodes_layouts() {
        let mut p = Vec::new();
        p.extend_from_slice(&12.5f64.to_le_bytes());
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&6u32.to_le_bytes());
        p.extend_from_slice(&0u16.to_le_bytes());
        let (e, clr) = decode_pool_event(55, &p, 8).unwrap();
        assert_eq!(
            e,
            PoolEvent::Adjustment {
                average_throughput: 12.5,
                new_count: 7,
                reason: AdjustmentReason::Starvation
            }
        );
        assert_eq!(clr, Some(0));
        // Without the ClrInstanceID; then too short.
        assert!(decode_pool_event(55, &p[..16], 8).unwrap().1.is_none());
        assert!(decode_pool_event(55, &p[..15], 8).is_none());
        // Pointer sizes.
        let id = 0x1122_3344_5566_7788u64.to_le_bytes();
        assert_eq!(
            decode_pool_event(61, &id, 8).unwrap().0,
            PoolEvent::Enqueue {
                work_id: 0x1122_3344_5566_7788
            }
        );
        assert_eq!(
            decode_pool_event(62, &id, 4).unwrap().0,
            PoolEvent::Dequeue {
                work_id: 0x5566_7788
            }
        );
        assert!(decode_pool_event(52, &id, 8).is_none());
        let stats = vec![0u8; 9 * 8 + 4];
        assert!(matches!(
            decode_pool_event(56, &stats, 8),
            Some((PoolEvent::AdjustmentStats(_), Some(0)))
        ));
        assert!(decode_pool_event(56, &stats[..73], 8).is_none());
    }

    #[test]
    fn decodes_framework_items() {
        let id = 0x01f5_50a4u64.to_le_bytes();
        assert_eq!(
            decode_framework_event(30, &id),
            Some(PoolEvent::EnqueueWork {
                work_id: 0x01f5_50a4
            })
        );
        assert_eq!(
            decode_framework_event(31, &id),
            Some(PoolEvent::DequeueWork {
                work_id: 0x01f5_50a4
            })
        );
        assert_eq!(decode_framework_event(31, &id[..7]), None);
        assert_eq!(decode_framework_event(150, &id), None);
    }
}

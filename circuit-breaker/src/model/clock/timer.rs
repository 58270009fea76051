//! The runtime-agnostic timer behind [`WallClock::sleep_until`](crate::clock::WallClock::sleep_until)
//! for real clocks (B2, B13): one background thread, started the first time a deadline is
//! set, with a heap of deadlines and the wakers to call when each is reached.
//!
//! Why not a runtime's timer: the crate forces no runtime on its users (B2), and a deadline
//! must work under tokio, async-std, smol or a hand-written `block_on` alike. Why not the
//! `futures-timer` crate: it is the same design (a global thread), one more dependency in
//! every build for some 100 lines, and its `Delay` does not say when it is dropped, so the
//! heap could not forget a cancelled deadline before it is due. Only calls to a tool *with*
//! a timeout ever touch this module; the healthy path of the others never does.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// One deadline: reached or not, and who to wake when it is.
#[derive(Debug, Default)]
struct Entry {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Entry {
    fn fire(&self) {
        self.fired.store(true, Ordering::Release);
        let waker = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// A deadline in the heap: earliest first, then in the order they were set.
struct Due {
    at: Instant,
    seq: u64,
    /// Weak: a sleep dropped before its deadline (the tool answered in time) frees its entry.
    entry: Weak<Entry>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    // Reversed: `BinaryHeap` is a max-heap, the earliest deadline must come out first.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Due>,
    seq: u64,
}

struct Timer {
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// The timer, its thread started on first use; `None` where no thread can be started (then
/// deadlines are not enforced, and a warning says so once).
fn timer() -> Option<&'static Timer> {
    static TIMER: OnceLock<Option<&'static Timer>> = OnceLock::new();
    *TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        }));
        match std::thread::Builder::new()
            .name("circuit-breaker-timer".to_owned())
            .spawn(move || run(timer))
        {
            Ok(_) => Some(timer),
            Err(error) => {
                tracing::warn!(%error, "no timer thread: tool deadlines are not enforced");
                None
            }
        }
    })
}

/// The timer thread: sleeps until the earliest deadline, wakes what is due (outside the lock,
/// so that a waker that polls at once may set another deadline), and again.
fn run(timer: &'static Timer) {
    let mut due = Vec::new();
    loop {
        {
            let mut queue = timer.queue.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                let now = Instant::now();
                while queue.heap.peek().is_some_and(|d| d.at <= now) {
                    if let Some(d) = queue.heap.pop() {
                        due.push(d.entry);
                    }
                }
                if !due.is_empty() {
                    break;
                }
                queue = match queue.heap.peek().map(|d| d.at - now) {
                    Some(wait) => {
                        timer
                            .changed
                            .wait_timeout(queue, wait)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0
                    }
                    None => timer
                        .changed
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner),
                };
            }
        }
        for entry in due.drain(..) {
            if let Some(entry) = entry.upgrade() {
                entry.fire();
            }
        }
    }
}

/// A future that completes at `at` (real time, monotonic).
pub(crate) struct Delay {
    entry: Arc<Entry>,
}

impl Delay {
    pub(crate) fn until(at: Instant) -> Self {
        let entry = Arc::new(Entry::default());
        if at <= Instant::now() {
            entry.fired.store(true, Ordering::Release);
            return Delay { entry };
        }
        let Some(timer) = timer() else {
            return Delay { entry };
        };
        let mut queue = timer.queue.lock().unwrap_or_else(PoisonError::into_inner);
        // Entries of sleeps dropped early stay until their deadline; when the heap has grown,
        // they are swept out, so a service that mostly answers in time keeps it small.
        if queue.heap.len() >= 1024 && queue.heap.len().is_power_of_two() {
            queue.heap.retain(|d| d.entry.strong_count() > 0);
        }
        let earliest = queue.heap.peek().is_none_or(|d| at < d.at);
        queue.seq = queue.seq.wrapping_add(1);
        let seq = queue.seq;
        queue.heap.push(Due {
            at,
            seq,
            entry: Arc::downgrade(&entry),
        });
        drop(queue);
        if earliest {
            timer.changed.notify_one();
        }
        Delay { entry }
    }
}

impl Future for Delay {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.entry.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        {
            let mut waker = self
                .entry
                .waker
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match &mut *waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                slot => *slot = Some(cx.waker().clone()),
            }
        }
        // Fired between the first look and the waker's store: the timer found no waker.
        if self.entry.fired.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::task::Wake;
    use std::time::Duration;

    struct Notify(Mutex<mpsc::Sender<()>>);

    impl Wake for Notify {
        fn wake(self: Arc<Self>) {
            let _ = self.0.lock().unwrap().send(());
        }
    }

    #[test]
    fn a_delay_wakes_its_task_after_its_deadline_and_not_before() {
        let (tx, rx) = mpsc::channel();
        let waker = Waker::from(Arc::new(Notify(Mutex::new(tx))));
        let mut cx = Context::from_waker(&waker);
        let start = Instant::now();
        let mut late = Delay::until(start + Duration::from_millis(60));
        let mut early = Delay::until(start + Duration::from_millis(20));
        assert!(Pin::new(&mut late).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut early).poll(&mut cx).is_pending());
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(Pin::new(&mut early).poll(&mut cx).is_ready());
        assert!(start.elapsed() >= Duration::from_millis(20));
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(Pin::new(&mut late).poll(&mut cx).is_ready());
        assert!(start.elapsed() >= Duration::from_millis(60));
        // A deadline already past is ready at once.
        assert!(Pin::new(&mut Delay::until(start)).poll(&mut cx).is_ready());
    }
}

//! Group commit: the requests that arrive while a batch is being written wait, and go
//! together in the next one, so concurrent deliveries share each store's synced commit
//! instead of paying one each.
//!
//! A request is queued with a one-shot channel for its answer, so a waiting request holds no
//! thread: an async handler awaits it, a blocking caller blocks on it. The caller that finds
//! nobody writing becomes the writer: it starts a loop (on a thread the caller chooses) that
//! writes batches until the queue is empty. Under load the loop keeps running and requests
//! only queue and wait; a written batch wakes exactly its own requests. (Before, every
//! request held a blocking thread and every batch woke every waiter: under load, context
//! switches were a third of the daemon's CPU.)

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::oneshot;

/// What a request gets back: its own answers, or why its batch failed.
pub type Answer<O> = Result<Vec<O>, String>;

/// A queue of requests, each a list of items, written in batches.
pub struct GroupCommit<I, O> {
    state: Mutex<State<I, O>>,
    /// A batch takes whole requests, in arrival order, until it holds this many items (one
    /// request larger than that is a batch of its own, never split).
    batch_items: usize,
}

struct State<I, O> {
    queued: VecDeque<(Vec<I>, oneshot::Sender<Answer<O>>)>,
    /// A writer loop is running (or about to): new requests only queue.
    writing: bool,
}

/// A queued request: its answer to come, and whether the caller must start the writer.
pub struct Queued<O> {
    pub answer: oneshot::Receiver<Answer<O>>,
    pub start_writer: bool,
}

impl<I, O> GroupCommit<I, O> {
    pub fn new(batch_items: usize) -> GroupCommit<I, O> {
        GroupCommit {
            state: Mutex::new(State {
                queued: VecDeque::new(),
                writing: false,
            }),
            batch_items: batch_items.max(1),
        }
    }

    /// Queues `items`. When nobody is writing, the caller is told to start the writer (run
    /// [`GroupCommit::write_queued`] somewhere that may block); exactly one caller is told so
    /// until that loop ends.
    pub fn enqueue(&self, items: Vec<I>) -> Queued<O> {
        let (tell, answer) = oneshot::channel();
        let mut state = self.lock();
        state.queued.push_back((items, tell));
        let start_writer = !state.writing;
        state.writing = true;
        Queued {
            answer,
            start_writer,
        }
    }

    /// The writer's loop: writes the queue's batches, in order, until it is empty. `write`
    /// gets a batch's requests and answers each, in order; its error (or its panic) is every
    /// request's in that batch. `written` hears each batch's outcome (for readiness).
    pub fn write_queued(
        &self,
        write: impl Fn(&[Vec<I>]) -> Result<Vec<Vec<O>>, String>,
        written: impl Fn(Result<(), &str>),
    ) {
        // If this loop dies by a panic outside `write` (say in `written`), the next request
        // finds nobody writing and starts a writer for what is still queued, rather than
        // waiting for a loop that is gone. Only then: on a normal return the loop has already
        // said so under the lock, and a writer started since must not be disowned.
        struct Unwinding<'a, I, O>(&'a GroupCommit<I, O>);
        impl<I, O> Drop for Unwinding<'_, I, O> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.lock().writing = false;
                }
            }
        }
        let _unwinding = Unwinding(self);
        loop {
            let batch = {
                let mut state = self.lock();
                if state.queued.is_empty() {
                    state.writing = false;
                    return;
                }
                self.next_batch(&mut state.queued)
            };
            let (requests, tells): (Vec<Vec<I>>, Vec<_>) = batch.into_iter().unzip();
            let outcome = catch_unwind(AssertUnwindSafe(|| write(&requests)))
                .unwrap_or_else(|_| Err("writing the batch failed unexpectedly (a panic)".into()));
            let answers: Vec<Answer<O>> = match outcome {
                Ok(answers) if answers.len() == tells.len() => {
                    written(Ok(()));
                    answers.into_iter().map(Ok).collect()
                }
                Ok(answers) => {
                    let why = format!(
                        "a batch of {} requests got {} answers",
                        tells.len(),
                        answers.len()
                    );
                    written(Err(&why));
                    tells.iter().map(|_| Err(why.clone())).collect()
                }
                Err(why) => {
                    written(Err(&why));
                    tells.iter().map(|_| Err(why.clone())).collect()
                }
            };
            for (tell, answer) in tells.into_iter().zip(answers) {
                // A request whose caller gave up waiting is written all the same.
                let _ = tell.send(answer);
            }
        }
    }

    /// Queues `items`, writes them (with whatever queued meanwhile) on this thread if nobody
    /// else is writing, and returns their answers: the blocking form, for callers outside an
    /// async runtime. When another caller's loop is running, this waits for it.
    pub fn submit(
        &self,
        items: Vec<I>,
        write: impl Fn(&[Vec<I>]) -> Result<Vec<Vec<O>>, String>,
        written: impl Fn(Result<(), &str>),
    ) -> Answer<O> {
        let queued = self.enqueue(items);
        if queued.start_writer {
            self.write_queued(write, written);
        }
        queued
            .answer
            .blocking_recv()
            .unwrap_or_else(|_| Err("the batch writer stopped before answering".into()))
    }

    /// Takes whole requests off the front of `queued` up to the batch size (at least one).
    fn next_batch<T>(&self, queued: &mut VecDeque<(Vec<I>, T)>) -> Vec<(Vec<I>, T)> {
        let mut batch = Vec::new();
        let mut items = 0;
        while let Some((front, _)) = queued.front() {
            if !batch.is_empty() && items + front.len() > self.batch_items {
                break;
            }
            let Some(request) = queued.pop_front() else {
                break;
            };
            items += request.0.len();
            batch.push(request);
        }
        batch
    }

    fn lock(&self) -> MutexGuard<'_, State<I, O>> {
        // The state is consistent between statements; a panic elsewhere poisons nothing here.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::Condvar;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn double(batch: &[Vec<u32>]) -> Result<Vec<Vec<u32>>, String> {
        Ok(batch
            .iter()
            .map(|request| request.iter().map(|n| n * 2).collect())
            .collect())
    }

    #[test]
    fn requests_queued_during_a_write_share_the_next_one_and_each_gets_its_own_answers() {
        let group = Arc::new(GroupCommit::<u32, u32>::new(1000));
        let batches = Arc::new(Mutex::new(Vec::<usize>::new()));
        let first_started = Arc::new((Mutex::new(false), Condvar::new()));
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let write = {
            let batches = batches.clone();
            let first_started = first_started.clone();
            let release = release.clone();
            move |batch: &[Vec<u32>]| {
                let first = {
                    let mut seen = batches.lock().unwrap();
                    seen.push(batch.len());
                    seen.len() == 1
                };
                if first {
                    // Hold the first write until every other request is queued behind it.
                    *first_started.0.lock().unwrap() = true;
                    first_started.1.notify_all();
                    let (lock, cvar) = &*release;
                    let _held = cvar
                        .wait_while(lock.lock().unwrap(), |released| !*released)
                        .unwrap();
                }
                double(batch)
            }
        };
        let write = Arc::new(write);
        let submit = |n: u32| {
            let group = group.clone();
            let write = write.clone();
            std::thread::spawn(move || group.submit(vec![n, n + 1], |b| write(b), |_| {}))
        };
        let first = submit(0);
        let (lock, cvar) = &*first_started;
        drop(cvar.wait_while(lock.lock().unwrap(), |s| !*s).unwrap());
        let rest: Vec<_> = (1..=8).map(|i| submit(i * 10)).collect();
        while group.lock().queued.len() < 8 {
            std::thread::sleep(Duration::from_millis(1));
        }
        *release.0.lock().unwrap() = true;
        release.1.notify_all();

        assert_eq!(first.join().unwrap(), Ok(vec![0, 2]));
        for (i, handle) in (1..=8).zip(rest) {
            assert_eq!(handle.join().unwrap(), Ok(vec![i * 20, i * 20 + 2]));
        }
        assert_eq!(
            *batches.lock().unwrap(),
            [1, 8],
            "the eight waiting went as one batch"
        );
    }

    /// Many callers at once, each submitting many times, with writes of uneven length: every
    /// caller gets exactly its own answers, and nobody sleeps forever (the targeted wakes
    /// never miss the next writer).
    #[test]
    fn many_concurrent_callers_each_get_their_own_answers_and_none_is_left_asleep() {
        let group = Arc::new(GroupCommit::<u32, u32>::new(64));
        let writes = Arc::new(AtomicUsize::new(0));
        let (done, finished) = std::sync::mpsc::channel();
        for caller in 0..32u32 {
            let group = group.clone();
            let writes = writes.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                for round in 0..200u32 {
                    let n = caller * 1_000 + round;
                    let answer = group.submit(
                        vec![n; 1 + (round % 3) as usize],
                        |batch| {
                            let k = writes.fetch_add(1, Ordering::SeqCst);
                            if k.is_multiple_of(7) {
                                std::thread::sleep(Duration::from_micros(200));
                            }
                            double(batch)
                        },
                        |_| {},
                    );
                    assert_eq!(answer, Ok(vec![n * 2; 1 + (round % 3) as usize]));
                }
                done.send(caller).unwrap();
            });
        }
        drop(done);
        let mut callers = 0;
        while callers < 32 {
            finished
                .recv_timeout(Duration::from_secs(60))
                .expect("a caller is still waiting after 60 s: a wake was missed");
            callers += 1;
        }
        assert!(
            writes.load(Ordering::SeqCst) < 32 * 200,
            "concurrent requests shared batches"
        );
    }

    #[test]
    fn a_batch_takes_whole_requests_up_to_its_size_and_never_splits_one() {
        let group = GroupCommit::<u32, u32>::new(5);
        let mut queued: VecDeque<(Vec<u32>, u64)> = [
            (vec![1, 2, 3], 0),
            (vec![4, 5], 1),
            (vec![6], 2),
            (vec![0; 9], 3),
        ]
        .into();
        let tags =
            |batch: Vec<(Vec<u32>, u64)>| batch.into_iter().map(|(_, t)| t).collect::<Vec<_>>();
        assert_eq!(tags(group.next_batch(&mut queued)), [0, 1]);
        assert_eq!(
            tags(group.next_batch(&mut queued)),
            [2],
            "the next request would pass the size"
        );
        let large = group.next_batch(&mut queued);
        assert_eq!(
            (large.len(), large[0].0.len()),
            (1, 9),
            "a large one goes whole"
        );
        assert!(queued.is_empty());
    }

    #[test]
    fn a_failed_or_panicking_write_fails_its_batch_and_the_next_one_is_written() {
        let group = GroupCommit::<u32, u32>::new(10);
        let heard = Mutex::new(Vec::<Result<(), String>>::new());
        let hear = |outcome: Result<(), &str>| {
            heard.lock().unwrap().push(outcome.map_err(str::to_owned));
        };
        let failed = group.submit(vec![1], |_| Err("disk full".into()), hear);
        assert_eq!(failed, Err("disk full".to_string()));
        let panicked = group.submit(vec![1], |_| panic!("a bug"), hear);
        assert!(panicked.unwrap_err().contains("panic"));
        let short = group.submit(vec![1], |_| Ok(Vec::new()), hear);
        assert!(short.unwrap_err().contains("got 0 answers"));
        let calls = AtomicUsize::new(0);
        let ok = group.submit(
            vec![3],
            |b| {
                calls.fetch_add(1, Ordering::SeqCst);
                double(b)
            },
            hear,
        );
        assert_eq!((ok, calls.into_inner()), (Ok(vec![6]), 1));
        // Each batch's outcome is heard (readiness follows it): three failures, then a success.
        let heard = heard.into_inner().unwrap();
        assert_eq!(heard.len(), 4, "{heard:?}");
        assert!(heard[..3].iter().all(Result::is_err), "{heard:?}");
        assert_eq!(heard[3], Ok(()));
    }

    /// A writer loop that dies outside the write (here in the outcome callback) leaves no
    /// one stuck behind it: the next request starts a writer and is answered.
    #[test]
    fn a_writer_loop_that_dies_does_not_strand_the_next_request() {
        let group = GroupCommit::<u32, u32>::new(10);
        let died = catch_unwind(AssertUnwindSafe(|| {
            group.submit(vec![1], double, |_| panic!("the outcome callback failed"))
        }));
        assert!(died.is_err());
        assert!(
            !group.lock().writing,
            "nobody is writing after the loop died"
        );
        assert_eq!(group.submit(vec![2], double, |_| {}), Ok(vec![4]));
    }
}

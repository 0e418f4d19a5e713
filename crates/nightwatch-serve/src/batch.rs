//! Group commit: the requests that arrive while a batch is being written wait, and go
//! together in the next one, so concurrent deliveries share each store's synced commit
//! instead of paying one each. No thread of its own: the first caller that finds no batch
//! being written writes the queue's next batch for everyone, then the callers read their
//! answers.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A queue of requests, each a list of items, written in batches by its callers.
pub struct GroupCommit<I, O> {
    state: Mutex<State<I, O>>,
    turn: Condvar,
    /// A batch takes whole requests, in arrival order, until it holds this many items (one
    /// request larger than that is a batch of its own, never split).
    batch_items: usize,
}

struct State<I, O> {
    queued: VecDeque<(u64, Vec<I>)>,
    answers: HashMap<u64, Result<Vec<O>, String>>,
    writing: bool,
    next_ticket: u64,
}

impl<I, O> GroupCommit<I, O> {
    pub fn new(batch_items: usize) -> GroupCommit<I, O> {
        GroupCommit {
            state: Mutex::new(State {
                queued: VecDeque::new(),
                answers: HashMap::new(),
                writing: false,
                next_ticket: 0,
            }),
            turn: Condvar::new(),
            batch_items: batch_items.max(1),
        }
    }

    /// Queues `items` and returns their answers once the batch that holds them is written.
    /// `write` gets a batch's requests and answers each, in order; its error (or its panic)
    /// is every request's in that batch.
    pub fn submit(
        &self,
        items: Vec<I>,
        write: impl Fn(&[Vec<I>]) -> Result<Vec<Vec<O>>, String>,
    ) -> Result<Vec<O>, String> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queued.push_back((ticket, items));
        loop {
            if let Some(answer) = state.answers.remove(&ticket) {
                return answer;
            }
            if state.writing {
                state = self.turn.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            let (tickets, requests) = self.next_batch(&mut state.queued);
            state.writing = true;
            drop(state);
            let written = catch_unwind(AssertUnwindSafe(|| write(&requests)))
                .unwrap_or_else(|_| Err("writing the batch failed unexpectedly (a panic)".into()));
            state = self.lock();
            match written {
                Ok(answers) if answers.len() == tickets.len() => {
                    state
                        .answers
                        .extend(tickets.into_iter().zip(answers.into_iter().map(Ok)));
                }
                Ok(answers) => {
                    let why = format!(
                        "a batch of {} requests got {} answers",
                        tickets.len(),
                        answers.len()
                    );
                    state
                        .answers
                        .extend(tickets.into_iter().map(|t| (t, Err(why.clone()))));
                }
                Err(why) => {
                    state
                        .answers
                        .extend(tickets.into_iter().map(|t| (t, Err(why.clone()))));
                }
            }
            state.writing = false;
            self.turn.notify_all();
        }
    }

    /// Takes whole requests off the front of `queued` up to the batch size (at least one).
    fn next_batch(&self, queued: &mut VecDeque<(u64, Vec<I>)>) -> (Vec<u64>, Vec<Vec<I>>) {
        let mut tickets = Vec::new();
        let mut requests = Vec::new();
        let mut items = 0;
        while let Some((_, front)) = queued.front() {
            if !requests.is_empty() && items + front.len() > self.batch_items {
                break;
            }
            let Some((ticket, request)) = queued.pop_front() else {
                break;
            };
            items += request.len();
            tickets.push(ticket);
            requests.push(request);
        }
        (tickets, requests)
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
            std::thread::spawn(move || group.submit(vec![n, n + 1], |b| write(b)))
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

    #[test]
    fn a_batch_takes_whole_requests_up_to_its_size_and_never_splits_one() {
        let group = GroupCommit::<u32, u32>::new(5);
        let mut queued: VecDeque<(u64, Vec<u32>)> = [
            (0, vec![1, 2, 3]),
            (1, vec![4, 5]),
            (2, vec![6]),
            (3, vec![0; 9]),
        ]
        .into();
        let (tickets, _) = group.next_batch(&mut queued);
        assert_eq!(tickets, [0, 1]);
        let (tickets, _) = group.next_batch(&mut queued);
        assert_eq!(tickets, [2], "the next request would pass the size");
        let (tickets, requests) = group.next_batch(&mut queued);
        assert_eq!(
            (tickets, requests[0].len()),
            (vec![3], 9),
            "a large one goes whole"
        );
        assert!(queued.is_empty());
    }

    #[test]
    fn a_failed_or_panicking_write_fails_its_batch_and_the_next_one_is_written() {
        let group = GroupCommit::<u32, u32>::new(10);
        let failed = group.submit(vec![1], |_| Err("disk full".into()));
        assert_eq!(failed, Err("disk full".to_string()));
        let panicked = group.submit(vec![1], |_| panic!("a bug"));
        assert!(panicked.unwrap_err().contains("panic"));
        let short = group.submit(vec![1], |_| Ok(Vec::new()));
        assert!(short.unwrap_err().contains("got 0 answers"));
        let calls = AtomicUsize::new(0);
        let ok = group.submit(vec![3], |b| {
            calls.fetch_add(1, Ordering::SeqCst);
            double(b)
        });
        assert_eq!((ok, calls.into_inner()), (Ok(vec![6]), 1));
    }
}

//! The one tokio runtime all remote I/O runs on, and the stores built for this process.
//!
//! The core's sources are synchronous, and their callers are of three kinds: plain threads (the
//! CLI, Python), the worker threads of another runtime (DataFusion's) and the blocking threads
//! of one. [`run`] hands a future to this runtime and waits for it in the way each of those
//! allows: `Runtime::block_on` panics inside a runtime, and waiting on a multi-thread runtime's
//! worker would starve its other tasks unless tokio is told (`block_in_place`).
//!
//! A forked child (Dask's multiprocessing scheduler) inherits the parent's runtime without its
//! threads, and the stores' connection pools without their driver: the process id tells, and a
//! child builds both afresh.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{mpsc, Arc, Mutex};

use arrowsmith::{Error, ErrorClass, Result};
use object_store::ObjectStore;
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// Worker threads of the I/O runtime: the work is waiting on sockets, and the machine the
/// readers decode on needs its cores.
const WORKER_THREADS: usize = 2;

/// What belongs to one process: its runtime and the stores built in it, by cache key.
struct Process {
    pid: u32,
    runtime: Arc<Runtime>,
    stores: HashMap<String, Arc<dyn ObjectStore>>,
}

static PROCESS: Mutex<Option<Process>> = Mutex::new(None);

/// The state of this process, built afresh in a child that forked from the one that built it.
fn with_process<T>(f: impl FnOnce(&mut Process) -> Result<T>) -> Result<T> {
    let mut guard = PROCESS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let pid = std::process::id();
    if guard.as_ref().is_none_or(|process| process.pid != pid) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("arrowsmith-store")
            .enable_all()
            .build()
            .map_err(|e| {
                Error::new(
                    ErrorClass::Io,
                    "could not start the runtime for remote storage",
                )
                .with_source(e)
            })?;
        let stale = guard.replace(Process {
            pid,
            runtime: Arc::new(runtime),
            stores: HashMap::new(),
        });
        // The parent's runtime has no threads in this child: dropping it would wait on them.
        std::mem::forget(stale);
    }
    f(guard.as_mut().expect("set above"))
}

/// The store cached under `key` in this process, built by `build` the first time.
pub(crate) fn cached_store(
    key: String,
    build: impl FnOnce() -> Result<Arc<dyn ObjectStore>>,
) -> Result<Arc<dyn ObjectStore>> {
    with_process(|process| {
        if let Some(store) = process.stores.get(&key) {
            return Ok(Arc::clone(store));
        }
        // Built inside the runtime: a client binds its connection pool to the runtime it
        // first runs on, and this is the one every request runs on.
        let _entered = process.runtime.enter();
        let store = build()?;
        process.stores.insert(key, Arc::clone(&store));
        Ok(store)
    })
}

/// Runs `future` on the I/O runtime and waits for its output, from any thread: a plain one, a
/// worker of another runtime (multi-thread or current-thread) or a blocking thread.
pub(crate) fn run<F>(future: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let runtime = with_process(|process| Ok(Arc::clone(&process.runtime)))?;
    let (sender, receiver) = mpsc::sync_channel(1);
    runtime.spawn(async move {
        // The receiver waits until this is sent; it cannot be gone.
        let _ = sender.send(future.await);
    });
    let wait = move || receiver.recv();
    let output = match Handle::try_current().map(|handle| handle.runtime_flavor()) {
        // A worker of a multi-thread runtime: tokio moves its other tasks elsewhere meanwhile.
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait),
        // A current-thread runtime has no other thread to move them to, and a plain thread
        // has none to move: the work runs on the I/O runtime's threads while this one waits.
        _ => wait(),
    };
    output.map_err(|_| {
        Error::new(
            ErrorClass::Io,
            "a remote storage request stopped without an answer (its task panicked)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> Result<u64> {
        run(async {
            tokio::task::yield_now().await;
            42
        })
    }

    #[test]
    fn runs_from_a_plain_thread() {
        assert_eq!(answer().unwrap(), 42);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_from_a_multi_thread_runtime_worker() {
        assert_eq!(answer().unwrap(), 42);
        let from_blocking = tokio::task::spawn_blocking(answer).await.unwrap();
        assert_eq!(from_blocking.unwrap(), 42);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn runs_from_a_current_thread_runtime() {
        assert_eq!(answer().unwrap(), 42);
    }

    /// Dask's multiprocessing scheduler forks a process that already read: the child has the
    /// parent's runtime without its threads, and must build its own instead of waiting forever.
    #[cfg(unix)]
    #[test]
    fn a_forked_child_gets_a_runtime_of_its_own() {
        assert_eq!(answer().unwrap(), 42);
        // SAFETY: the child only runs `answer` and leaves by `_exit`; an alarm ends it if it
        // hangs, which is the failure this test is about.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            unsafe { libc::alarm(20) };
            let code = match answer() {
                Ok(42) => 0,
                _ => 1,
            };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child failed or hung (wait status {status})"
        );
        assert_eq!(answer().unwrap(), 42);
    }

    #[test]
    fn a_panicking_request_is_an_error() {
        let error = run(async { panic!("boom") }).unwrap_err();
        assert!(error.to_string().contains("panicked"), "{error}");
    }
}

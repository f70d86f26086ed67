//! Network namespaces as the sampler meets them: a process's namespace is
//! `/proc/PID/ns/net`, named by its inode; a netlink socket opened on a
//! thread that joined a namespace stays bound to that namespace after the
//! thread is gone, so a short-lived thread does the joining and the
//! sampler's own thread never changes namespace.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// A network namespace: its inode, and the open namespace file that keeps
/// naming it while it is open.
#[derive(Debug)]
pub struct NetNs {
    pub inode: u64,
    file: File,
}

impl NetNs {
    /// The namespace `pid` runs in.
    pub fn of_pid(pid: u32) -> io::Result<NetNs> {
        NetNs::open(&format!("/proc/{pid}/ns/net"))
    }

    /// The namespace of the calling thread.
    pub fn current() -> io::Result<NetNs> {
        NetNs::open("/proc/thread-self/ns/net")
    }

    /// A namespace file such as `/run/netns/NAME` or `/proc/PID/ns/net`.
    pub fn open(path: &str) -> io::Result<NetNs> {
        let file = File::open(path)?;
        let inode = file.metadata()?.ino();
        Ok(NetNs { inode, file })
    }

    /// Runs `f` on a new thread that has joined this namespace, and returns
    /// its result; the calling thread's namespace is untouched. Joining
    /// needs `CAP_SYS_ADMIN`; without it the error is the kernel's `EPERM`.
    pub fn run_in<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let file = self.file.try_clone()?;
        std::thread::Builder::new()
            .name("netns-join".into())
            .spawn(move || {
                // SAFETY: setns on an open namespace descriptor changes only
                // this thread's namespace, and the thread ends after f.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                f()
            })?
            .join()
            .map_err(|_| io::Error::other("the namespace thread panicked"))?
    }
}

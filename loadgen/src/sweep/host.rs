//! What the sweep asks of the host: the TIME_WAIT count, and enough file
//! descriptors for the connections a saturated server leaves open.

use std::io;

/// TIME_WAIT sockets of this network namespace (`tw` on the `TCP:` line of
/// `/proc/net/sockstat`, IPv4 and IPv6 together). On loopback the server's
/// TIME_WAIT sockets are counted too: the kernel does not say whose they are.
pub fn time_wait_sockets() -> Option<u64> {
    parse_time_wait(&std::fs::read_to_string("/proc/net/sockstat").ok()?)
}

/// The `tw` value of the `TCP:` line of a sockstat text.
pub fn parse_time_wait(sockstat: &str) -> Option<u64> {
    let line = sockstat.lines().find(|l| l.starts_with("TCP:"))?;
    let mut words = line.split_whitespace().skip(1);
    while let Some(key) = words.next() {
        let value = words.next()?;
        if key == "tw" {
            return value.parse().ok();
        }
    }
    None
}

/// Raises the soft limit of open files to the hard limit and returns the
/// new soft limit. A saturated server keeps up to `rate x timeout`
/// connections of ours open (2,000/s for 5 s is 10,000), far beyond the
/// usual soft limit of 1,024; running out would count as client errors
/// (`fd_exhausted`, in `err_other`) rather than show the server's limit.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let limit = crate::fds::Limit::current()?;
    Ok(limit.set_soft(limit.hard)?.soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockstat_tw_is_read() {
        let text =
            "sockets: used 10\nTCP: inuse 1 orphan 0 tw 684 alloc 1 mem 200\nUDP: inuse 0 mem 0\n";
        assert_eq!(parse_time_wait(text), Some(684));
        assert_eq!(parse_time_wait("TCP: inuse 1 orphan 0\n"), None);
        assert_eq!(parse_time_wait("UDP: inuse 0 tw 3\n"), None);
        assert_eq!(parse_time_wait("TCP: inuse 1 tw\n"), None);
        assert_eq!(parse_time_wait(""), None);
    }

    #[test]
    fn this_host_has_a_count_and_a_limit() {
        assert!(time_wait_sockets().is_some());
        assert!(raise_open_files_limit().expect("rlimit") >= 1);
    }
}

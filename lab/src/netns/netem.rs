//! Whether the kernel offers netem (delay and loss) in a namespace.

/// Why the kernel has no netem (delay and loss), or none when it has it:
/// tried once on `dev` in the namespace `ns` and removed again.
pub fn netem_missing(ns: &str, dev: &str) -> Option<String> {
    let add = [
        "-n", ns, "qdisc", "add", "dev", dev, "root", "netem", "delay", "1ms",
    ];
    match super::ip::run("tc", &add) {
        Ok(()) => {
            let _ = super::ip::run("tc", &["-n", ns, "qdisc", "del", "dev", dev, "root"]);
            None
        }
        Err(e) => Some(format!(
            "no netem in this kernel: links are shaped by rate only, without delay or loss ({e:#})"
        )),
    }
}

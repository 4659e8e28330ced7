//! A small network of Linux network namespaces for fault-injection tests: one *services*
//! namespace holding a bridge (`br0`, address [`SERVICES_ADDR`]) and `hosts` host namespaces,
//! each joined to the bridge by a veth pair (`eth0` in the host, `h<i>` on the bridge) with the
//! address [`Netns::host_addr`]. Every address exists only inside these namespaces: nothing is
//! routed to or from the machine's own network. The veth pairs are created inside the
//! namespaces (`ip -n <services> link add h<i> … peer name eth0 netns <host>`), so the root
//! namespace's interfaces are never touched.
//!
//! A partition of host `i` sets its bridge-side link down ([`Netns::partition`]): its TCP
//! connections stay open and silent until [`Netns::heal`], as across a failed switch port.
//!
//! Names are unique per test process (`sl<pid>s`, `sl<pid>h<i>`); dropping the [`Netns`]
//! deletes the namespaces (and with them the veth pairs and the bridge). Processes started in
//! them must be stopped by their owners first (a namespace lives on while a process is in it).
//!
//! Needs root (`CAP_SYS_ADMIN`) and iproute2's `ip`: [`Netns::unavailable`] says what is missing.

use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
use std::process::Command;

use crate::TestkitError;

/// The services namespace's address on the bridge (Kafka, PostgreSQL).
pub const SERVICES_ADDR: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 213, 0, 1));

/// A set of network namespaces joined by a bridge; deleted on drop.
#[derive(Debug)]
pub struct Netns {
    services: String,
    hosts: Vec<String>,
}

/// Runs `ip` with `args`; an error names the command and what `ip` said.
fn ip(args: &[&str]) -> Result<(), TestkitError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| TestkitError::Io {
            what: format!("running ip {}", args.join(" ")),
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(TestkitError::Failed {
            what: format!("ip {}", args.join(" ")),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

impl Netns {
    /// Why namespaces cannot be made here (not root, no `ip`, or creating one fails), or
    /// `None` if they can: a probe namespace is created and deleted.
    pub fn unavailable() -> Option<String> {
        let uid = Command::new("id").arg("-u").output();
        match uid {
            Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "0" => {}
            Ok(o) => {
                return Some(format!(
                    "not root (uid {}): network namespaces need root (CAP_SYS_ADMIN)",
                    String::from_utf8_lossy(&o.stdout).trim()
                ))
            }
            Err(e) => return Some(format!("cannot run `id -u`: {e}")),
        }
        let probe = format!("sl{}probe", std::process::id());
        if let Err(e) = ip(&["netns", "add", &probe]) {
            return Some(format!(
                "cannot create a network namespace with iproute2's `ip` (install iproute2, run \
                 as root with CAP_SYS_ADMIN): {e}"
            ));
        }
        let _ = ip(&["netns", "del", &probe]);
        None
    }

    /// The services namespace with its bridge and `hosts` host namespaces joined to it.
    pub fn create(hosts: usize) -> Result<Self, TestkitError> {
        let pid = std::process::id();
        let services = format!("sl{pid}s");
        let mut net = Netns {
            services: services.clone(),
            hosts: Vec::new(),
        };
        // Leftovers of an earlier process with the same PID.
        let _ = ip(&["netns", "del", &services]);
        ip(&["netns", "add", &services])?;
        let s = services.as_str();
        ip(&["-n", s, "link", "set", "lo", "up"])?;
        ip(&["-n", s, "link", "add", "br0", "type", "bridge"])?;
        ip(&[
            "-n",
            s,
            "addr",
            "add",
            &format!("{SERVICES_ADDR}/24"),
            "dev",
            "br0",
        ])?;
        ip(&["-n", s, "link", "set", "br0", "up"])?;
        for i in 0..hosts {
            let host = format!("sl{pid}h{i}");
            let _ = ip(&["netns", "del", &host]);
            ip(&["netns", "add", &host])?;
            net.hosts.push(host.clone());
            let h = host.as_str();
            let port = format!("h{i}");
            ip(&[
                "-n", s, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", h,
            ])?;
            ip(&["-n", s, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", s, "link", "set", &port, "up"])?;
            ip(&["-n", h, "link", "set", "lo", "up"])?;
            ip(&[
                "-n",
                h,
                "addr",
                "add",
                &format!("{}/24", Self::host_addr(i)),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", h, "link", "set", "eth0", "up"])?;
        }
        Ok(net)
    }

    /// The services namespace's name.
    pub fn services(&self) -> &str {
        &self.services
    }

    /// Host `i`'s namespace name.
    pub fn host(&self, i: usize) -> &str {
        &self.hosts[i]
    }

    /// Host `i`'s address (10.213.0.10 + i).
    pub fn host_addr(i: usize) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 213, 0, 10 + i as u8))
    }

    /// `program` to be run inside namespace `ns` (`ip netns exec`, which execs: the child's
    /// PID is the program's).
    pub fn command(ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).arg(program);
        c
    }

    /// Cuts host `i` off the bridge: its bridge-side link goes down (its own `eth0` loses
    /// its carrier); connections stay open, their packets dropped.
    pub fn partition(&self, i: usize) -> Result<(), TestkitError> {
        ip(&[
            "-n",
            &self.services,
            "link",
            "set",
            &format!("h{i}"),
            "down",
        ])
    }

    /// Joins host `i` to the bridge again.
    pub fn heal(&self, i: usize) -> Result<(), TestkitError> {
        ip(&["-n", &self.services, "link", "set", &format!("h{i}"), "up"])
    }

    /// Runs `f` on a thread of this process that entered namespace `ns` (`setns`): its sockets
    /// are that namespace's (a network namespace is per thread; the caller's stays as it was).
    pub fn run_in<T: Send + 'static>(
        ns: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, TestkitError> {
        let path = format!("/var/run/netns/{ns}");
        let file = std::fs::File::open(&path).map_err(|source| TestkitError::Io {
            what: format!("opening {path}"),
            source,
        })?;
        let t = std::thread::spawn(move || -> Result<T, TestkitError> {
            nix::sched::setns(file.as_raw_fd(), nix::sched::CloneFlags::CLONE_NEWNET).map_err(
                |e| TestkitError::Failed {
                    what: format!("setns into {path}"),
                    detail: e.to_string(),
                },
            )?;
            Ok(f())
        });
        t.join().map_err(|_| TestkitError::Failed {
            what: format!("a thread in network namespace {ns}"),
            detail: "it panicked".into(),
        })?
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in self.hosts.iter().chain([&self.services]) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

//! One process's network endpoint: a TCP connection to every other process (the higher index
//! connects to the lower, then says `Hello`), one reader thread per connection dispatching frames
//! to the channels registered on this process, and frames for a channel not registered yet kept
//! until it is (the two processes deploy their tasks independently).

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::wire::{read_frame, ChannelId, Frame};
use crate::NetError;

/// Receives the frames addressed to one registered channel end.
pub(crate) trait Handler: Send + Sync {
    fn on_frame(&self, frame: Frame) -> Result<(), NetError>;
}

enum Slot {
    /// Frames that arrived before the channel end registered.
    Pending(Vec<Frame>),
    Ready(Arc<dyn Handler>),
}

/// The sending half of one connection (frames are written whole under its lock).
pub(crate) struct Peer {
    writer: Mutex<BufWriter<TcpStream>>,
    stream: TcpStream,
}

impl Peer {
    pub(crate) fn send(&self, bytes: &[u8]) -> Result<(), NetError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        w.write_all(bytes)?;
        w.flush()?;
        Ok(())
    }
}

pub(crate) struct Inner {
    index: usize,
    peers: Mutex<HashMap<usize, Arc<Peer>>>,
    peers_cv: Condvar,
    /// Data-bearing frames by channel, at the receiving process (key: channel, the receiving end).
    inbound: Mutex<HashMap<ChannelId, Slot>>,
    /// Credit frames by channel, at the sending process.
    outbound: Mutex<HashMap<ChannelId, Slot>>,
    failure: Mutex<Option<String>>,
}

/// This process's end of the exchange: `process` of `peers.len()` processes.
#[derive(Clone)]
pub struct NetEndpoint {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for NetEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NetEndpoint(process {})", self.inner.index)
    }
}

impl NetEndpoint {
    /// Connects process `index` to every other of `peers` (index = process; `listener` is bound
    /// to `peers[index]`), waiting up to `timeout` for all connections.
    pub fn start(
        index: usize,
        peers: &[SocketAddr],
        listener: TcpListener,
        timeout: Duration,
    ) -> Result<NetEndpoint, NetError> {
        if index >= peers.len() {
            return Err(NetError::Config(format!(
                "process index {index} is not below the number of peers {}",
                peers.len()
            )));
        }
        let inner = Arc::new(Inner {
            index,
            peers: Mutex::new(HashMap::new()),
            peers_cv: Condvar::new(),
            inbound: Mutex::new(HashMap::new()),
            outbound: Mutex::new(HashMap::new()),
            failure: Mutex::new(None),
        });
        let expected_in = peers.len() - 1 - index;
        let acc = inner.clone();
        std::thread::Builder::new()
            .name(format!("net-accept-{index}"))
            .spawn(move || {
                for _ in 0..expected_in {
                    match listener.accept() {
                        Ok((s, _)) => {
                            if let Err(e) = acc.clone().adopt(s, None) {
                                acc.fail(format!("accepting a peer: {e}"));
                            }
                        }
                        Err(e) => acc.fail(format!("accept: {e}")),
                    }
                }
            })?;
        let deadline = Instant::now() + timeout;
        for (j, addr) in peers.iter().enumerate().take(index) {
            let stream = loop {
                match TcpStream::connect(addr) {
                    Ok(s) => break s,
                    Err(e) if Instant::now() > deadline => {
                        return Err(NetError::Connect(format!("process {j} at {addr}: {e}")))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            };
            inner.clone().adopt(stream, Some(j))?;
        }
        let mut ps = inner.peers.lock().unwrap_or_else(|p| p.into_inner());
        while ps.len() < peers.len() - 1 {
            if let Some(f) = inner
                .failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
            {
                return Err(NetError::Connect(f));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NetError::Connect(format!(
                    "process {index}: {} of {} peers connected after {timeout:?}",
                    ps.len(),
                    peers.len() - 1
                )));
            }
            ps = inner
                .peers_cv
                .wait_timeout(ps, left.min(Duration::from_millis(100)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(ps);
        Ok(NetEndpoint { inner })
    }

    pub fn process(&self) -> usize {
        self.inner.index
    }

    /// The first connection failure, if any (a reader or writer hit an I/O or protocol error).
    pub fn failure(&self) -> Option<String> {
        self.inner
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn peer(&self, process: usize) -> Result<Arc<Peer>, NetError> {
        self.inner
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&process)
            .cloned()
            .ok_or_else(|| NetError::Config(format!("no connection to process {process}")))
    }

    pub(crate) fn register(
        &self,
        inbound: bool,
        channel: ChannelId,
        handler: Arc<dyn Handler>,
    ) -> Result<(), NetError> {
        let map = if inbound {
            &self.inner.inbound
        } else {
            &self.inner.outbound
        };
        let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
        let early = match m.insert(channel, Slot::Ready(handler.clone())) {
            Some(Slot::Pending(f)) => f,
            Some(Slot::Ready(_)) => {
                return Err(NetError::Config(format!(
                    "channel {channel:?} registered twice"
                )))
            }
            None => Vec::new(),
        };
        // Replayed under the map's lock, so a frame arriving now cannot overtake them.
        for f in early {
            handler.on_frame(f)?;
        }
        Ok(())
    }

    /// Shuts every connection down (readers end, writers fail).
    pub fn shutdown(&self) {
        for p in self
            .inner
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            let _ = p.stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Inner {
    fn fail(&self, msg: String) {
        tracing::warn!(process = self.index, "network exchange: {msg}");
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(msg);
        drop(f);
        self.peers_cv.notify_all();
    }

    /// Says hello, learns the peer's index (given for outgoing connections), starts its reader.
    fn adopt(self: Arc<Self>, stream: TcpStream, known: Option<usize>) -> Result<(), NetError> {
        stream.set_nodelay(true)?;
        let mut reader = BufReader::with_capacity(256 << 10, stream.try_clone()?);
        let peer = Arc::new(Peer {
            writer: Mutex::new(BufWriter::with_capacity(256 << 10, stream.try_clone()?)),
            stream,
        });
        peer.send(
            &Frame::Hello {
                process: self.index as u32,
            }
            .encode(),
        )?;
        let mut scratch = Vec::new();
        let remote = match read_frame(&mut reader, &mut scratch)? {
            Some(Frame::Hello { process }) => process as usize,
            other => {
                return Err(NetError::Malformed(format!(
                    "expected Hello first, got {other:?}"
                )))
            }
        };
        if known.is_some_and(|k| k != remote) {
            return Err(NetError::Malformed(format!(
                "connected to process {known:?} but it says it is {remote}"
            )));
        }
        self.peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(remote, peer);
        self.peers_cv.notify_all();
        let me = self.clone();
        std::thread::Builder::new()
            .name(format!("net-read-{}<-{remote}", self.index))
            .spawn(move || {
                if let Err(e) = me.read_loop(&mut reader, &mut scratch) {
                    me.fail(format!("connection from process {remote}: {e}"));
                }
            })?;
        Ok(())
    }

    fn read_loop(
        &self,
        reader: &mut BufReader<TcpStream>,
        scratch: &mut Vec<u8>,
    ) -> Result<(), NetError> {
        while let Some(frame) = read_frame(reader, scratch)? {
            let Some(channel) = frame.channel() else {
                return Err(NetError::Malformed("a second Hello".into()));
            };
            let inbound = !matches!(
                frame,
                Frame::PartitionRequest { .. } | Frame::AddCredit { .. }
            );
            let map = if inbound {
                &self.inbound
            } else {
                &self.outbound
            };
            let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
            match m
                .entry(channel)
                .or_insert_with(|| Slot::Pending(Vec::new()))
            {
                Slot::Pending(v) => v.push(frame),
                Slot::Ready(h) => {
                    let h = h.clone();
                    drop(m);
                    h.on_frame(frame)?;
                }
            }
        }
        Ok(())
    }
}

impl NetEndpoint {
    pub(crate) fn inner_fail(&self, msg: String) {
        self.inner.fail(msg);
    }
}

//! One process's network endpoint: a TCP connection to every other process (the higher index
//! connects to the lower, then says `Hello`), one reader thread per connection dispatching frames
//! (decoded in place from its 256 KiB read buffer) to the channels registered on this process,
//! and frames for a channel not registered yet kept
//! until it is (the two processes deploy their tasks independently). Control-plane messages
//! (one `Frame::Control`, or `ControlPart` pieces and a last `Control` for a message longer
//! than [`CONTROL_PIECE_BYTES`], reassembled per connection) and the loss of a peer go to one
//! handler ([`NetEndpoint::on_control`]). Every connection has TCP keepalive, a heartbeat
//! thread and a read deadline ([`crate::liveness`]): a peer silent for the heartbeat timeout is
//! lost, and its connection is cut.

use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::liveness::{is_deadline, keepalive};
use crate::wire::{
    ChannelId, Frame, FrameReader, FrameRef, CONTROL_PIECE_BYTES, MAX_CONTROL_MESSAGE_BYTES,
};
use crate::{Liveness, NetError};

/// Receives the frames addressed to one registered channel end (decoded in place: the bytes
/// borrow the connection's read buffer).
pub(crate) trait Handler: Send + Sync {
    fn on_frame(&self, frame: FrameRef<'_>) -> Result<(), NetError>;
}

/// What the control-plane handler receives.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlEvent {
    /// A message from process `from` (its bytes are the job master's encoding).
    Message {
        /// The sending process's index.
        from: usize,
        /// The message, in the job master's encoding.
        bytes: Vec<u8>,
    },
    /// The connection to `process` ended or failed while this endpoint was running: that
    /// process died or cut the link, so the job cannot go on.
    PeerLost {
        /// The lost process's index.
        process: usize,
        /// How the connection ended.
        reason: String,
    },
}

/// The control-plane handler.
pub type ControlHandler = Arc<dyn Fn(ControlEvent) + Send + Sync>;

enum ControlSlot {
    /// Events that arrived before a handler was set.
    Pending(Vec<ControlEvent>),
    Ready(ControlHandler),
}

enum Slot {
    /// Frames that arrived before the channel end registered.
    Pending(Vec<Frame>),
    Ready(Arc<dyn Handler>),
}

/// The sending half of one connection. Each caller hands whole frames (one or a batch of
/// many, encoded by the caller in a buffer of its own), written with one `write_all` under the
/// lock: frames never interleave, and a batch costs one system call, not one per frame.
pub(crate) struct Peer {
    writer: Mutex<TcpStream>,
    /// Held while the pieces of one control message are written: another control message
    /// cannot come between them (the reader reassembles one at a time per connection), and
    /// control messages leave in the order their senders got here.
    control: Mutex<()>,
    stream: TcpStream,
    /// Set when the connection's reader ended (however): its heartbeats stop.
    ended: AtomicBool,
}

impl Peer {
    pub(crate) fn send(&self, bytes: &[u8]) -> Result<(), NetError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        w.write_all(bytes)?;
        Ok(())
    }

    /// [`send`](Self::send), unless `stop` holds once the writer is taken: a heartbeat must
    /// not follow a goodbye (the peer stops reading at it, and unread bytes make its close a
    /// reset).
    fn send_unless(&self, bytes: &[u8], stop: impl Fn() -> bool) -> Result<(), NetError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if !stop() {
            w.write_all(bytes)?;
        }
        Ok(())
    }

    /// Sends one control message of any length up to [`MAX_CONTROL_MESSAGE_BYTES`]: as one
    /// `Control` frame, or as `ControlPart` pieces of [`CONTROL_PIECE_BYTES`] and a last
    /// `Control` (no frame may exceed [`crate::wire::MAX_FRAME_BYTES`]). The writer is taken
    /// per piece, so the pumps' data frames are not held up behind a whole large message.
    fn send_control(&self, bytes: &[u8]) -> Result<(), NetError> {
        if bytes.len() as u64 > MAX_CONTROL_MESSAGE_BYTES {
            return Err(NetError::TooLarge(format!(
                "a control message of {} bytes exceeds the limit of {MAX_CONTROL_MESSAGE_BYTES} \
                 bytes",
                bytes.len()
            )));
        }
        let _one_message = self.control.lock().unwrap_or_else(|p| p.into_inner());
        let mut frame = Vec::with_capacity(bytes.len().min(CONTROL_PIECE_BYTES) + 5);
        let mut rest = bytes;
        loop {
            let (piece, more) = rest.split_at(rest.len().min(CONTROL_PIECE_BYTES));
            frame.clear();
            if more.is_empty() {
                FrameRef::Control { bytes: piece }.encode_into(&mut frame)?;
                return self.send(&frame);
            }
            FrameRef::ControlPart { bytes: piece }.encode_into(&mut frame)?;
            self.send(&frame)?;
            rest = more;
        }
    }
}

pub(crate) struct Inner {
    index: usize,
    /// Every process's address, by index (this one's is where it listens).
    addresses: Vec<SocketAddr>,
    peers: Mutex<HashMap<usize, Arc<Peer>>>,
    peers_cv: Condvar,
    /// Data-bearing frames by channel, at the receiving process (key: channel, the receiving end).
    inbound: Mutex<HashMap<ChannelId, Slot>>,
    /// Credit frames by channel, at the sending process.
    outbound: Mutex<HashMap<ChannelId, Slot>>,
    failure: Mutex<Option<String>>,
    control: Mutex<ControlSlot>,
    /// Set by [`NetEndpoint::shutdown`]: connections ending after it are no lost peers.
    closing: std::sync::atomic::AtomicBool,
    /// Peers that said goodbye: their part of the job ended; nothing more is sent to them.
    departed: Mutex<std::collections::HashSet<usize>>,
    /// Reader threads still running (shutdown waits a moment for them: see there).
    readers: Mutex<usize>,
    readers_cv: Condvar,
    /// Outbox pumps still running: [`NetEndpoint::shutdown`] waits for them, since a pump may
    /// still hold buffers (and the end of partition) its writers finished with.
    pumps: Mutex<usize>,
    pumps_cv: Condvar,
    liveness: Liveness,
    /// Heartbeat threads sleep on this between beats; woken to end when the endpoint closes
    /// or their connection's reader ended.
    beats: Mutex<()>,
    beats_cv: Condvar,
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
        Self::start_with(index, peers, listener, timeout, Liveness::default())
    }

    /// [`start`](Self::start) with the connections' liveness rule.
    pub fn start_with(
        index: usize,
        peers: &[SocketAddr],
        listener: TcpListener,
        timeout: Duration,
        liveness: Liveness,
    ) -> Result<NetEndpoint, NetError> {
        liveness.validate()?;
        if index >= peers.len() {
            return Err(NetError::Config(format!(
                "process index {index} is not below the number of peers {}",
                peers.len()
            )));
        }
        let inner = Arc::new(Inner {
            index,
            addresses: peers.to_vec(),
            peers: Mutex::new(HashMap::new()),
            peers_cv: Condvar::new(),
            inbound: Mutex::new(HashMap::new()),
            outbound: Mutex::new(HashMap::new()),
            failure: Mutex::new(None),
            control: Mutex::new(ControlSlot::Pending(Vec::new())),
            closing: std::sync::atomic::AtomicBool::new(false),
            departed: Mutex::new(Default::default()),
            readers: Mutex::new(0),
            readers_cv: Condvar::new(),
            pumps: Mutex::new(0),
            pumps_cv: Condvar::new(),
            liveness,
            beats: Mutex::new(()),
            beats_cv: Condvar::new(),
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

    /// This process's index in the job (0 runs the job master).
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
            handler.on_frame(f.borrowed())?;
        }
        Ok(())
    }

    /// Sets the control-plane handler; events that arrived before it are handed over first,
    /// in order. A second call replaces the handler (a new job attempt).
    pub fn on_control(&self, handler: ControlHandler) {
        let mut c = self.inner.control.lock().unwrap_or_else(|p| p.into_inner());
        if let ControlSlot::Pending(early) =
            std::mem::replace(&mut *c, ControlSlot::Ready(handler.clone()))
        {
            // Under the lock, so a message arriving now cannot overtake them.
            for e in early {
                handler(e);
            }
        }
    }

    /// Sends a control-plane message of any length up to [`MAX_CONTROL_MESSAGE_BYTES`] to
    /// process `to` (none to a process that said goodbye: its part of the job ended). A longer
    /// one is an error and nothing is sent.
    pub fn send_control(&self, to: usize, bytes: Vec<u8>) -> Result<(), NetError> {
        if self
            .inner
            .departed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&to)
        {
            return Ok(());
        }
        self.peer(to)?.send_control(&bytes)
    }

    /// Every process's address, by process index: where each listens for its peers (its
    /// TaskManager's data port, in Flink's words).
    pub fn addresses(&self) -> &[SocketAddr] {
        &self.inner.addresses
    }

    /// The number of processes (this one included).
    pub fn processes(&self) -> usize {
        self.inner
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
            + 1
    }

    /// Says goodbye to every peer (its end of the connection is then no lost process) and
    /// shuts every connection down (readers end, writers fail). Call it when this process's
    /// part of the job ended well; a process that dies or fails without it is a lost peer.
    ///
    /// The goodbye goes with a half-close, and the connections are closed only when the peers
    /// closed theirs too (or after [`SHUTDOWN_GRACE`]): closing a socket with unread input
    /// sends a reset, which could reach a peer before it read the goodbye.
    ///
    /// First it waits until every outbox pump of this process ended: the tasks' part ended, but
    /// a pump may still hold their last buffers (waiting for the receiver's credit) and their
    /// end of partition, which must reach the peer before the goodbye. It waits without a
    /// deadline (a slow receiver is backpressure, not a fault) unless the exchange failed.
    pub fn shutdown(&self) {
        self.wait_for_pumps();
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.stop_heartbeats();
        let peers: Vec<Arc<Peer>> = self
            .inner
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for p in &peers {
            if let Ok(goodbye) = FrameRef::Goodbye.encode() {
                let _ = p.send(&goodbye);
            }
            let _ = p.stream.shutdown(std::net::Shutdown::Write);
        }
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        let mut n = self.inner.readers.lock().unwrap_or_else(|p| p.into_inner());
        while *n > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            n = self
                .inner
                .readers_cv
                .wait_timeout(n, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(n);
        for p in &peers {
            let _ = p.stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl NetEndpoint {
    /// Closes every connection at once, without a goodbye: what the peers see of a process
    /// that died (each reports this one lost). For a process whose part of the job failed and
    /// that wants its peers to know before it exits.
    pub fn abort(&self) {
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.stop_heartbeats();
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

impl NetEndpoint {
    /// Counts a running outbox pump until the returned guard drops.
    pub(crate) fn pump_running(&self) -> PumpCount {
        *self.inner.pumps.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        PumpCount(self.inner.clone())
    }

    /// Waits until no outbox pump runs, or the exchange failed (a lost peer grants no more
    /// credit, so a pump holding buffers for it would wait forever).
    fn wait_for_pumps(&self) {
        let mut n = self.inner.pumps.lock().unwrap_or_else(|p| p.into_inner());
        while *n > 0 && self.failure().is_none() {
            n = self
                .inner
                .pumps_cv
                .wait_timeout(n, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// A running outbox pump, counted by its endpoint until it drops.
pub(crate) struct PumpCount(Arc<Inner>);

impl Drop for PumpCount {
    fn drop(&mut self) {
        let mut n = self.0.pumps.lock().unwrap_or_else(|p| p.into_inner());
        *n = n.saturating_sub(1);
        self.0.pumps_cv.notify_all();
    }
}

/// How long [`NetEndpoint::shutdown`] waits for the peers to close their ends.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

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
        keepalive(&stream)?;
        // The reader's deadline (the socket's, shared by its clones: only the reader reads).
        stream.set_read_timeout(Some(self.liveness.timeout))?;
        let mut reader = FrameReader::new(stream.try_clone()?, READ_BUFFER_BYTES);
        let peer = Arc::new(Peer {
            writer: Mutex::new(stream.try_clone()?),
            control: Mutex::new(()),
            stream,
            ended: AtomicBool::new(false),
        });
        peer.send(
            &FrameRef::Hello {
                process: self.index as u32,
            }
            .encode()?,
        )?;
        let timeout = self.liveness.timeout;
        let hello = reader.next_frame().map_err(|e| {
            if is_deadline(&e) {
                NetError::HeartbeatTimeout(format!("no Hello from a peer within {timeout:?}"))
            } else {
                e
            }
        })?;
        let remote = match hello {
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
            .insert(remote, peer.clone());
        self.peers_cv.notify_all();
        let me = self.clone();
        let mine = peer.clone();
        *self.readers.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        std::thread::Builder::new()
            .name(format!("net-read-{}<-{remote}", self.index))
            .spawn(move || {
                let _count = ReaderCount(&me);
                let result = me.read_loop(remote, &mut reader);
                mine.ended.store(true, SeqCst);
                me.stop_heartbeats();
                let reason = match result {
                    Ok(true) => return,
                    Ok(false) => "the connection was closed".to_string(),
                    Err(e) => {
                        let e = if is_deadline(&e) {
                            NetError::HeartbeatTimeout(format!(
                                "nothing arrived from process {remote} for {timeout:?}: it is \
                                 gone or hung"
                            ))
                        } else {
                            e
                        };
                        me.fail_or_close(format!("connection from process {remote}: {e}"));
                        // Cut: a writer blocked on a peer that stopped reading wakes with an
                        // error instead of hanging, and the peer, if alive, learns of it.
                        let _ = mine.stream.shutdown(std::net::Shutdown::Both);
                        e.to_string()
                    }
                };
                if !me.closing.load(std::sync::atomic::Ordering::SeqCst) {
                    me.control(ControlEvent::PeerLost {
                        process: remote,
                        reason,
                    });
                }
            })?;
        let me = self.clone();
        std::thread::Builder::new()
            .name(format!("net-beat-{}->{remote}", self.index))
            .spawn(move || me.heartbeats(&peer))?;
        Ok(())
    }

    /// Sends `peer` a heartbeat every heartbeat interval until the endpoint closes or the
    /// connection's reader ended (a thread per connection: a peer that stopped reading blocks
    /// only its own). A failed send ends it quietly: the reader reports the connection.
    fn heartbeats(&self, peer: &Peer) {
        let Ok(beat) = FrameRef::Heartbeat.encode() else {
            return;
        };
        let stop = || self.closing.load(SeqCst) || peer.ended.load(SeqCst);
        loop {
            {
                let g = self.beats.lock().unwrap_or_else(|p| p.into_inner());
                if stop() {
                    return;
                }
                let _ = self
                    .beats_cv
                    .wait_timeout(g, self.liveness.heartbeat_interval)
                    .unwrap_or_else(|p| p.into_inner());
            }
            if peer.send_unless(&beat, stop).is_err() {
                return;
            }
        }
    }

    /// Wakes the heartbeat threads to look whether they should end (under their lock, so
    /// none misses it between its look and its wait).
    fn stop_heartbeats(&self) {
        let _g = self.beats.lock().unwrap_or_else(|p| p.into_inner());
        self.beats_cv.notify_all();
    }

    /// A connection ended; while closing that is expected, not a warning.
    fn fail_or_close(&self, msg: String) {
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            tracing::debug!(process = self.index, "network exchange closed: {msg}");
        } else {
            self.fail(msg);
        }
    }

    fn control(&self, event: ControlEvent) {
        let mut c = self.control.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *c {
            ControlSlot::Pending(v) => v.push(event),
            ControlSlot::Ready(h) => {
                let h = h.clone();
                drop(c);
                h(event);
            }
        }
    }

    fn read_loop(
        &self,
        remote: usize,
        reader: &mut FrameReader<TcpStream>,
    ) -> Result<bool, NetError> {
        // Handlers of registered channel ends, as last seen in the maps: a registration is
        // never undone, so the maps' locks are taken only for a channel not seen ready yet.
        let mut ready: HashMap<(bool, ChannelId), Arc<dyn Handler>> = HashMap::new();
        // The control message whose pieces are arriving (`ControlPart` frames so far).
        let mut message: Option<Vec<u8>> = None;
        while let Some(frame) = reader.next_frame()? {
            let frame = match frame {
                Frame::Heartbeat => continue,
                Frame::Goodbye => {
                    self.departed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(remote);
                    return Ok(true);
                }
                Frame::ControlPart { bytes } => {
                    let m = message.get_or_insert_with(Vec::new);
                    append_piece(m, bytes, remote, MAX_CONTROL_MESSAGE_BYTES)?;
                    continue;
                }
                Frame::Control { bytes } => {
                    let bytes = match message.take() {
                        None => bytes.to_vec(),
                        Some(mut m) => {
                            append_piece(&mut m, bytes, remote, MAX_CONTROL_MESSAGE_BYTES)?;
                            m
                        }
                    };
                    self.control(ControlEvent::Message {
                        from: remote,
                        bytes,
                    });
                    continue;
                }
                f => f,
            };
            let Some(channel) = frame.channel() else {
                return Err(NetError::Malformed("a second Hello".into()));
            };
            let inbound = !matches!(
                frame,
                Frame::PartitionRequest { .. } | Frame::AddCredit { .. }
            );
            if let Some(h) = ready.get(&(inbound, channel)) {
                h.on_frame(frame)?;
                continue;
            }
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
                Slot::Pending(v) => v.push(frame.owned()),
                Slot::Ready(h) => {
                    let h = h.clone();
                    drop(m);
                    ready.insert((inbound, channel), h.clone());
                    h.on_frame(frame)?;
                }
            }
        }
        Ok(false)
    }
}

/// Adds a piece to the control message being reassembled, refusing one that would grow past
/// `limit` ([`MAX_CONTROL_MESSAGE_BYTES`]: memory a peer could make this process hold).
fn append_piece(m: &mut Vec<u8>, piece: &[u8], from: usize, limit: u64) -> Result<(), NetError> {
    let len = m.len() as u64 + piece.len() as u64;
    if len > limit {
        return Err(NetError::TooLarge(format!(
            "a control message from process {from} of at least {len} bytes exceeds the limit \
             of {limit} bytes"
        )));
    }
    m.extend_from_slice(piece);
    Ok(())
}

/// The read buffer of a connection: one `read` takes up to this many bytes of frames.
const READ_BUFFER_BYTES: usize = 256 << 10;

impl NetEndpoint {
    pub(crate) fn inner_fail(&self, msg: String) {
        self.inner.fail(msg);
    }
}

/// Counts a running reader thread down when it ends, however it ends.
struct ReaderCount<'a>(&'a Inner);

impl Drop for ReaderCount<'_> {
    fn drop(&mut self) {
        let mut n = self.0.readers.lock().unwrap_or_else(|p| p.into_inner());
        *n = n.saturating_sub(1);
        self.0.readers_cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reassembled_control_message_stops_at_its_limit() {
        let mut m = Vec::new();
        append_piece(&mut m, &[1; 6], 1, 10).unwrap();
        append_piece(&mut m, &[2; 4], 1, 10).unwrap();
        let e = append_piece(&mut m, &[3], 1, 10).unwrap_err().to_string();
        assert!(
            e.contains("at least 11 bytes exceeds the limit of 10"),
            "{e}"
        );
        assert_eq!(m.len(), 10, "the refused piece is not kept");
    }
}

//! A Redis-protocol server over a ScreeDB database: RESP2 and RESP3 (through `HELLO 3`), the
//! string, key, hash and sorted-set commands YCSB and redis-benchmark use, with types encoded
//! over the engine's ordered keys (`docs/server.md`).
//!
//! - [`resp`]: the request parser and its limits; [`reply`]: replies and their encodings;
//! - [`encoding`]: the key layout; [`store`]: typed access and the per-key locks;
//! - `commands`: the command table; `conn`: one connection; `sweep`: active expiry and garbage
//!   collection of old subkeys; `workers`: the connection threads; `placement`: which thread
//!   serves a connection; `writer`: the thread that writes pipelined runs of SETs.
//!
//! [`spawn`] starts a server on its own thread (what tests use); [`run`] serves until
//! SIGINT/SIGTERM or SHUTDOWN (what `screedb serve` uses).

#![warn(missing_docs)]

mod commands;
mod conn;
pub mod encoding;
pub mod expiry;
mod placement;
pub mod reply;
pub mod resp;
#[doc(hidden)]
pub mod resp_fuzz;
pub mod store;
mod sweep;
mod workers;
mod writer;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use commands::CommandStats;
use store::Store;

/// How long a shutdown waits for connections to finish before it closes them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// When writes reach the disk: Redis's `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Every write is acknowledged after the WAL fsync (group-committed by the engine).
    Always,
    /// Writes are acknowledged once in the WAL (handed to the OS); a background task syncs the
    /// WAL once a second, so a power loss loses at most about a second.
    Everysec,
    /// The OS decides when the WAL reaches the disk.
    No,
}

impl SyncMode {
    /// The name `--sync` and CONFIG GET appendfsync use.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Always => "always",
            SyncMode::Everysec => "everysec",
            SyncMode::No => "no",
        }
    }
}

impl std::str::FromStr for SyncMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "always" => Ok(SyncMode::Always),
            "everysec" => Ok(SyncMode::Everysec),
            "no" => Ok(SyncMode::No),
            other => Err(format!(
                "unknown sync mode '{other}': use always, everysec or no"
            )),
        }
    }
}

/// Everything `screedb serve` takes.
#[derive(Debug, Clone)]
pub struct Config {
    /// The database directory (created if missing).
    pub db_path: PathBuf,
    /// Address to listen on. Default: `127.0.0.1:6379`.
    pub bind: String,
    /// Default: [`SyncMode::Everysec`].
    pub sync: SyncMode,
    /// The password AUTH wants; `None`: no authentication. Required for a non-loopback bind.
    pub requirepass: Option<String>,
    /// Request limits. Default: Redis's.
    pub limits: resp::Limits,
    /// Most clients connected at once. Default: 10,000 (Redis's `maxclients`).
    pub max_clients: usize,
    /// Largest output a client may have waiting; past it the client is disconnected. Default:
    /// 256 MiB.
    pub max_output_buffer: usize,
    /// Engine options (`create_if_missing` is set by the server). Default: the engine's, whose
    /// FloDB membuffer (`memory = Memory::Flodb`) suits a server's concurrent clients: it ran
    /// faster on every row of `scripts/bench-server.sh` (docs/server.md, "Benchmarks").
    pub options: screedb::Options,
    /// How often the sweeper (active expiry, old subkeys) runs. Default: 100 ms.
    pub sweep_interval: Duration,
    /// Threads serving connections ([`run`] only; [`spawn`] uses 2), each a single-threaded
    /// runtime that keeps the connections placed on it (docs/server.md, "Threads"). Default:
    /// `None`, one per core.
    pub threads: Option<usize>,
}

impl Config {
    /// The defaults for a database in `db_path`.
    pub fn new(db_path: impl Into<PathBuf>) -> Config {
        Config {
            db_path: db_path.into(),
            bind: "127.0.0.1:6379".to_string(),
            sync: SyncMode::Everysec,
            requirepass: None,
            limits: resp::Limits::default(),
            max_clients: 10_000,
            max_output_buffer: 256 << 20,
            options: screedb::Options::default(),
            sweep_interval: Duration::from_millis(100),
            threads: None,
        }
    }
}

/// Why the server could not start or stop cleanly.
#[derive(Debug)]
pub enum ServerError {
    /// The engine failed (opening or closing the database).
    Db(screedb::Error),
    /// A socket or runtime operation failed.
    Io(std::io::Error),
    /// The configuration cannot be served (the sentence says why).
    Config(String),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Db(e) => write!(f, "{e}"),
            ServerError::Io(e) => write!(f, "{e}"),
            ServerError::Config(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for ServerError {}

impl From<screedb::Error> for ServerError {
    fn from(e: screedb::Error) -> Self {
        ServerError::Db(e)
    }
}

impl From<std::io::Error> for ServerError {
    fn from(e: std::io::Error) -> Self {
        ServerError::Io(e)
    }
}

/// What every connection shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) config: Config,
    pub(crate) command_stats: CommandStats,
    pub(crate) clients: AtomicUsize,
    pub(crate) connections_received: AtomicU64,
    pub(crate) rejected_connections: AtomicU64,
    /// Connections handed to another connection thread (INFO `connections_moved`).
    pub(crate) connections_moved: AtomicU64,
    pub(crate) expired_keys: AtomicU64,
    pub(crate) next_client_id: AtomicU64,
    pub(crate) started: Instant,
    pub(crate) port: u16,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) scan_cursors: commands::ScanCursors,
    /// Writes pipelined runs of SETs ([`writer`]).
    pub(crate) writer: writer::Writer,
}

impl Shared {
    /// Asks the server to stop (SHUTDOWN, a signal, or [`RunningServer::shutdown`]).
    pub(crate) fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }
}

/// One connection's state.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) id: u64,
    /// 2 or 3.
    pub(crate) proto: u8,
    pub(crate) authenticated: bool,
    pub(crate) name: Option<Bytes>,
    /// Set by QUIT: close after the reply.
    pub(crate) quit: bool,
}

/// A server bound to its address, not yet serving.
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
}

fn is_loopback(bind: &str) -> bool {
    bind.parse::<SocketAddr>()
        .map(|a| a.ip().is_loopback())
        .unwrap_or_else(|_| bind.starts_with("localhost:"))
}

impl Server {
    /// Opens the database and binds the address. Refuses a non-loopback address without a
    /// password (Redis's protected mode).
    pub async fn bind(config: Config) -> Result<Server, ServerError> {
        if !is_loopback(&config.bind) && config.requirepass.is_none() {
            return Err(ServerError::Config(format!(
                "refusing to listen on {} without --requirepass: only loopback addresses may be \
                 served without a password",
                config.bind
            )));
        }
        let listener = TcpListener::bind(&config.bind).await?;
        let port = listener.local_addr()?.port();
        let mut options = config.options.clone().create_if_missing(true);
        // Expired keys leave the disk at compaction (an application filter, if given, stays).
        options
            .compaction_filter
            .get_or_insert_with(|| std::sync::Arc::new(expiry::ExpiryFilter));
        let path = config.db_path.clone();
        let db = tokio::task::spawn_blocking(move || screedb::Db::open(path, options))
            .await
            .map_err(|e| ServerError::Io(std::io::Error::other(e)))??;
        let (shutdown, _) = watch::channel(false);
        let store = Store::new(db, config.sync == SyncMode::Always);
        Ok(Server {
            shared: Arc::new(Shared {
                store,
                config,
                command_stats: CommandStats::new(),
                clients: AtomicUsize::new(0),
                connections_received: AtomicU64::new(0),
                rejected_connections: AtomicU64::new(0),
                connections_moved: AtomicU64::new(0),
                expired_keys: AtomicU64::new(0),
                next_client_id: AtomicU64::new(1),
                started: Instant::now(),
                port,
                shutdown,
                scan_cursors: commands::ScanCursors::default(),
                writer: writer::Writer::start()?,
            }),
            listener,
        })
    }

    /// The address it listens on (the port is known here when bound to port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until a shutdown is requested, then stops accepting, lets every connection finish
    /// the commands it has read, and closes the database.
    pub async fn run(self) -> Result<(), ServerError> {
        self.run_on(&[]).await
    }

    /// [`Server::run`], with `workers` as further connection threads (other runtimes, each
    /// driven by a thread of its own until this returns): connections start here, and those
    /// that bring enough work are placed over this thread and the workers
    /// ([`placement::Placement`]).
    pub(crate) async fn run_on(
        self,
        workers: &[tokio::runtime::Handle],
    ) -> Result<(), ServerError> {
        let Server { shared, listener } = self;
        let mut stop = shared.shutdown.subscribe();
        let mut background = JoinSet::new();
        background.spawn(sweep::run(Arc::clone(&shared)));
        if shared.config.sync == SyncMode::Everysec {
            background.spawn(sync_every_second(Arc::clone(&shared)));
        }
        let (placement, mut handoffs) = placement::Placement::new(workers.len() + 1);
        let placement = (!workers.is_empty()).then_some(placement);
        let mut conns = JoinSet::new();
        loop {
            while conns.try_join_next().is_some() {}
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let placement = placement.clone();
                        conns.spawn(conn::serve(Arc::clone(&shared), stream, placement));
                    }
                    // Out of descriptors and the like: wait a little rather than spin.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                },
                Some(handoff) = handoffs.recv() => {
                    // A socket belongs to the runtime that registered it: the connection
                    // registers it again on the thread it was placed on.
                    if let Some(worker) = handoff.thread.checked_sub(1).and_then(|i| workers.get(i)) {
                        shared.connections_moved.fetch_add(1, Ordering::Relaxed);
                        conns.spawn_on(conn::resume(Arc::clone(&shared), handoff), worker);
                    }
                }
            }
        }
        drop(listener);
        // Connections on their way to another thread close here: each holds the database.
        handoffs.close();
        while handoffs.try_recv().is_ok() {}
        // Connections finish what they read; one stuck writing to a client that never reads is
        // cut off after a grace period.
        let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
            while conns.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            conns.shutdown().await;
        }
        background.shutdown().await;
        // A blocking task (an everysec sync) may still hold a reference for a moment.
        let mut shared = shared;
        let mut tries = 0;
        let shared = loop {
            match Arc::try_unwrap(shared) {
                Ok(s) => break s,
                Err(again) if tries < 2000 => {
                    tries += 1;
                    shared = again;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(_) => {
                    return Err(ServerError::Config(
                        "a task still holds the database ten seconds after shutdown".to_string(),
                    ));
                }
            }
        };
        let db = shared.store.into_db();
        tokio::task::spawn_blocking(move || db.close())
            .await
            .map_err(|e| ServerError::Io(std::io::Error::other(e)))??;
        Ok(())
    }

    /// A handle that stops the server from anywhere.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.shared.shutdown.clone())
    }
}

/// Stops a running server.
#[derive(Debug, Clone)]
pub struct ShutdownHandle(watch::Sender<bool>);

impl ShutdownHandle {
    /// Asks the server to stop; [`Server::run`] returns once it has.
    pub fn shutdown(&self) {
        self.0.send_replace(true);
    }
}

/// `--sync everysec`: an empty synced batch each second makes every earlier write durable (the
/// engine syncs the WAL for it, group-committed with whatever else is being written).
async fn sync_every_second(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let s = Arc::clone(&shared);
        let _ = tokio::task::spawn_blocking(move || {
            s.store
                .db()
                .write(screedb::WriteBatch::new(), &screedb::WriteOptions::synced())
        })
        .await;
    }
}

/// A server running on a thread of its own.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    handle: ShutdownHandle,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
}

impl RunningServer {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://addr/`.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// Stops it and waits until the database is closed.
    pub fn shutdown(mut self) -> Result<(), ServerError> {
        self.handle.shutdown();
        self.join()
    }

    /// Waits until it stops by itself (SHUTDOWN).
    pub fn join(&mut self) -> Result<(), ServerError> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| ServerError::Config("the server thread panicked".to_string()))?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.handle.shutdown();
        let _ = self.join();
    }
}

/// Serves `config` on `threads` connection threads: this one, whose single-threaded runtime
/// also accepts connections and runs the background tasks, and `threads - 1` more
/// ([`workers::Workers`]). `ready` is called once the server listens; with `signals`, SIGINT
/// and SIGTERM stop it.
fn serve_on_threads(
    config: Config,
    threads: usize,
    signals: bool,
    ready: impl FnOnce(&Server) -> Result<(), ServerError>,
) -> Result<(), ServerError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let workers = workers::Workers::start(threads.max(1) - 1)?;
    let result = rt.block_on(async {
        let server = Server::bind(config).await?;
        ready(&server)?;
        if signals {
            let handle = server.shutdown_handle();
            tokio::spawn(async move {
                wait_for_signal().await;
                handle.shutdown();
            });
        }
        server.run_on(workers.handles()).await
    });
    workers.stop();
    result
}

/// Starts a server on a thread of its own (two connection threads) and returns once it
/// listens.
pub fn spawn(config: Config) -> Result<RunningServer, ServerError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("screedb-server-main".to_string())
        .spawn(move || {
            let listening = std::cell::Cell::new(false);
            let served = serve_on_threads(config, 2, false, |server| {
                let _ = tx.send(Ok((server.local_addr()?, server.shutdown_handle())));
                listening.set(true);
                Ok(())
            });
            match served {
                // Failed before listening: the caller hears it from the channel.
                Err(e) if !listening.get() => {
                    let _ = tx.send(Err(e));
                    Ok(())
                }
                other => other,
            }
        })?;
    match rx.recv() {
        Ok(Ok((addr, handle))) => Ok(RunningServer {
            addr,
            handle,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => match thread.join() {
            Ok(Err(e)) => Err(e),
            _ => Err(ServerError::Config("the server thread stopped".to_string())),
        },
    }
}

/// Serves `config` until SIGINT, SIGTERM or SHUTDOWN; `on_listen` is told the address first.
/// What `screedb serve` runs.
pub fn run(config: Config, on_listen: impl FnOnce(SocketAddr)) -> Result<(), ServerError> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = config.threads.unwrap_or(cores).max(1);
    serve_on_threads(config, threads, true, |server| {
        on_listen(server.local_addr()?);
        Ok(())
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// Number of connected clients right now (INFO clients, CLIENT LIST).
pub(crate) fn client_count(shared: &Shared) -> usize {
    shared.clients.load(Ordering::Relaxed)
}

//! `serve`: the Redis-protocol server (`crates/screedb-server`, `docs/server.md`).

use std::path::PathBuf;

use crate::{CliError, CliResult};

/// Arguments of `screedb serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Database directory (created if missing).
    #[arg(long)]
    db: PathBuf,
    /// Address to listen on. A non-loopback address needs --requirepass.
    #[arg(long, default_value = "127.0.0.1:6379")]
    bind: String,
    /// When writes reach the disk, as Redis's appendfsync: always (acknowledged after the
    /// fsync), everysec (synced in the background each second) or no (left to the OS).
    #[arg(long, default_value = "everysec")]
    sync: screedb_server::SyncMode,
    /// Password clients must give with AUTH (or HELLO ... AUTH).
    #[arg(long)]
    requirepass: Option<String>,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 10_000)]
    maxclients: usize,
    /// Largest bulk string a request may carry, in bytes.
    #[arg(long, default_value_t = 512 << 20)]
    proto_max_bulk_len: usize,
    /// Memtable size in MiB (the engine's write_buffer_size; default 64).
    #[arg(long)]
    write_buffer_mib: Option<usize>,
    /// Threads serving connections (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Memory component: flodb (the default, as for the engine) or skiplist (docs/memory.md,
    /// docs/server.md).
    #[arg(long, value_parser = crate::parse_memory)]
    memory: Option<screedb::Memory>,
}

/// Serves until SIGINT, SIGTERM or SHUTDOWN.
pub fn serve(args: ServeArgs) -> CliResult {
    let mut config = screedb_server::Config::new(args.db);
    config.bind = args.bind;
    config.sync = args.sync;
    config.requirepass = args.requirepass;
    config.max_clients = args.maxclients;
    config.limits.max_bulk_len = args.proto_max_bulk_len;
    if let Some(mib) = args.write_buffer_mib {
        config.options.write_buffer_size = mib << 20;
    }
    config.threads = args.threads;
    if let Some(memory) = args.memory {
        config.options.memory = memory;
    }
    let sync = config.sync.name();
    screedb_server::run(config, |addr| {
        eprintln!("screedb: serving the Redis protocol on {addr} (sync {sync})");
    })
    .map_err(|e| CliError::Usage(format!("serve: {e}")))
}

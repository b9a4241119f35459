//! One client connection: read what the client sent, run every whole request in it (a
//! pipeline runs as it arrived), send the replies in one write, repeat. Plain SETs that arrive
//! in a row are written as one batch ([`commands::execute_set_run`]), plain GETs that arrive in
//! a row are read as one multi-get ([`commands::execute_get_run`]).
//!
//! A connection starts on the accepting thread; once its reads bring enough work
//! ([`Probe`]), it is placed on a thread for good ([`Placement`]), and handed over if that
//! is another one ([`Handoff`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::placement::{Placement, Probe};
use crate::reply::Reply;
use crate::{Client, Shared, SyncMode, commands, resp, writer};

/// Replies are sent once this many bytes wait, even in the middle of a pipeline.
const FLUSH_AT: usize = 64 << 10;

/// Most plain SETs written as one batch.
const SET_RUN: usize = 256;

/// Most plain GETs read as one multi-get.
const GET_RUN: usize = 64;

/// Decrements the client count when the connection ends, however it ends (it moves with a
/// handed-over connection).
#[derive(Debug)]
struct Counted(Arc<Shared>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection carries apart from its socket, and so what moves with it to another
/// thread: the client's settings and the bytes read but not yet parsed.
#[derive(Debug)]
pub(crate) struct Conn {
    client: Client,
    input: BytesMut,
    counted: Counted,
}

/// A connection on its way to connection thread `thread` of its [`Placement`]. Its
/// replies so far are sent; its socket is out of the runtime that served it, to be registered
/// again by the one that takes it ([`resume`]).
#[derive(Debug)]
pub(crate) struct Handoff {
    pub(crate) thread: usize,
    pub(crate) conn: Conn,
    pub(crate) stream: std::net::TcpStream,
}

/// Runs the plain SETs waiting in `sets` as one batch and encodes a reply for each. With
/// `blocking` (`--sync always`) the batch waits for an fsync on the blocking pool, so this
/// thread serves its other connections meanwhile; otherwise a run of
/// [`writer::HANDED_OVER_RUN`] or more is written by the writer thread ([`writer`]), and a
/// shorter one here.
async fn run_sets(
    shared: &Arc<Shared>,
    sets: &mut Vec<resp::Request>,
    blocking: bool,
    proto: u8,
    out: &mut BytesMut,
) {
    if sets.is_empty() {
        return;
    }
    let n = sets.len();
    let reply = if blocking {
        let (sh, batch) = (Arc::clone(shared), std::mem::take(sets));
        tokio::task::spawn_blocking(move || commands::execute_set_run(&sh, &batch))
            .await
            .unwrap_or_else(|_| Reply::err("internal error running the command"))
    } else if n >= writer::HANDED_OVER_RUN {
        let (sh, batch) = (Arc::clone(shared), std::mem::take(sets));
        shared
            .writer
            .run(move || commands::execute_set_run(&sh, &batch))
            .await
            .unwrap_or_else(|| Reply::err("internal error running the command"))
    } else {
        let reply = commands::execute_set_run(shared, sets);
        sets.clear();
        reply
    };
    for _ in 0..n {
        reply.encode(proto, out);
    }
}

/// Runs the plain GETs waiting in `gets` as one multi-get and encodes their replies. False when
/// the replies pass the output buffer limit: the client is then dropped, as after one GET.
fn run_gets(shared: &Shared, gets: &mut Vec<resp::Request>, proto: u8, out: &mut BytesMut) -> bool {
    if gets.is_empty() {
        return true;
    }
    let replies = commands::execute_get_run(shared, gets);
    gets.clear();
    for reply in replies {
        reply.encode(proto, out);
        if out.len() > shared.config.max_output_buffer {
            return false;
        }
    }
    true
}

/// Serves a new connection until the client leaves, breaks the protocol, or the server stops,
/// or (with a `placement`) until it is handed to another thread.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    mut stream: TcpStream,
    placement: Option<Arc<Placement>>,
) {
    shared.connections_received.fetch_add(1, Ordering::Relaxed);
    let count = shared.clients.fetch_add(1, Ordering::Relaxed) + 1;
    let counted = Counted(Arc::clone(&shared));
    if count > shared.config.max_clients {
        shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
        let _ = stream
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    }
    let _ = stream.set_nodelay(true);
    let conn = Conn {
        client: Client {
            id: shared.next_client_id.fetch_add(1, Ordering::Relaxed),
            proto: 2,
            authenticated: shared.config.requirepass.is_none(),
            name: None,
            quit: false,
        },
        input: BytesMut::with_capacity(16 << 10),
        counted,
    };
    run(shared, conn, stream, placement).await;
}

/// Serves a handed-over connection on the thread that took it, until it ends.
pub(crate) async fn resume(shared: Arc<Shared>, handoff: Handoff) {
    if let Ok(stream) = TcpStream::from_std(handoff.stream) {
        run(shared, handoff.conn, stream, None).await;
    }
}

/// The connection's loop: read, run, reply.
async fn run(
    shared: Arc<Shared>,
    conn: Conn,
    mut stream: TcpStream,
    placement: Option<Arc<Placement>>,
) {
    let Conn {
        mut client,
        mut input,
        counted,
    } = conn;
    let mut stop = shared.shutdown.subscribe();
    let limits = shared.config.limits;
    let blocking = shared.config.sync == SyncMode::Always;
    // Replies wait at most this much before they are sent, so only one reply bigger than half
    // the limit can make a client break it.
    let flush_at = FLUSH_AT.min(shared.config.max_output_buffer / 2).max(1);
    let mut out = BytesMut::with_capacity(16 << 10);
    // Plain SETs (or GETs) parsed and not yet run: they run as one batch before anything else
    // is, so at most one of the two holds requests.
    let mut sets: Vec<resp::Request> = Vec::new();
    let mut gets: Vec<resp::Request> = Vec::new();
    // Until the connection is placed: where it goes, and what decides when.
    let mut placing = placement.map(|p| (p, Probe::default()));
    loop {
        if let Some((_, probe)) = &mut placing {
            probe.begin();
        }
        let mut close = false;
        // Requests parsed from what the last read brought.
        let mut parsed_now = 0usize;
        loop {
            let parsed = resp::parse(&mut input, &limits);
            if matches!(parsed, Ok(Some(_))) {
                parsed_now += 1;
            }
            let joins_sets = matches!(&parsed, Ok(Some(r)) if commands::is_plain_set(&client, r));
            let joins_gets = matches!(&parsed, Ok(Some(r)) if commands::is_plain_get(&client, r));
            if !joins_sets {
                run_sets(&shared, &mut sets, blocking, client.proto, &mut out).await;
            }
            if !joins_gets && !run_gets(&shared, &mut gets, client.proto, &mut out) {
                return;
            }
            match parsed {
                Ok(Some(request)) if joins_sets => {
                    sets.push(request);
                    if sets.len() >= SET_RUN {
                        run_sets(&shared, &mut sets, blocking, client.proto, &mut out).await;
                    }
                }
                Ok(Some(request)) if joins_gets => {
                    gets.push(request);
                    if gets.len() >= GET_RUN {
                        if !run_gets(&shared, &mut gets, client.proto, &mut out) {
                            return;
                        }
                        if out.len() >= flush_at {
                            if stream.write_all(&out).await.is_err() {
                                return;
                            }
                            out.clear();
                        }
                    }
                }
                Ok(Some(request)) if request.is_empty() => {}
                Ok(Some(request)) => {
                    let reply = if blocking && commands::writes(&shared, &request) {
                        // A synced write waits for an fsync: this thread serves its other
                        // connections meanwhile.
                        let (sh, mut c) = (Arc::clone(&shared), client.clone());
                        let done = tokio::task::spawn_blocking(move || {
                            let reply = commands::execute(&sh, &mut c, &request);
                            (reply, c)
                        })
                        .await;
                        match done {
                            Ok((reply, c)) => {
                                client = c;
                                reply
                            }
                            Err(_) => Reply::err("internal error running the command"),
                        }
                    } else {
                        commands::execute(&shared, &mut client, &request)
                    };
                    reply.encode(client.proto, &mut out);
                    if out.len() > shared.config.max_output_buffer {
                        // Redis's client-output-buffer-limit: the client is dropped.
                        return;
                    }
                    if client.quit {
                        close = true;
                        break;
                    }
                    if out.len() >= flush_at {
                        if stream.write_all(&out).await.is_err() {
                            return;
                        }
                        out.clear();
                    }
                }
                Ok(None) => {
                    if input.len() > limits.max_query_buffer {
                        Reply::err("Protocol error: query buffer limit reached")
                            .encode(client.proto, &mut out);
                        close = true;
                    }
                    break;
                }
                Err(e) => {
                    Reply::err(e).encode(client.proto, &mut out);
                    close = true;
                    break;
                }
            }
        }
        let due = placing
            .as_mut()
            .is_some_and(|(_, probe)| probe.end(parsed_now));
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        let stopping = *stop.borrow();
        if close || stopping {
            let _ = stream.shutdown().await;
            return;
        }
        if due && let Some((placement, _)) = placing.take() {
            let thread = placement.pick();
            if thread != 0 {
                // Every reply is sent and nothing is pending but unparsed input: the rest of
                // the connection runs on the other thread.
                let Ok(stream) = stream.into_std() else {
                    return;
                };
                let conn = Conn {
                    client,
                    input,
                    counted,
                };
                placement.hand_off(Handoff {
                    thread,
                    conn,
                    stream,
                });
                return;
            }
        }
        if input.capacity() - input.len() < 4096 {
            input.reserve(16 << 10);
        }
        let read = tokio::select! {
            read = stream.read_buf(&mut input) => Some(read),
            _ = stop.changed() => None,
        };
        match read {
            Some(Ok(0) | Err(_)) => return,
            Some(Ok(_)) => {}
            // Stopping: the loop above serves what was read, then closes.
            None => {}
        }
    }
}

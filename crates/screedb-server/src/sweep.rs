//! The sweeper: what a compaction filter would do if the engine had one.
//!
//! Every `sweep_interval` it looks at a bounded number of entries from where it stopped last
//! time, in two key ranges:
//! - metadata (`M`): an expired key is deleted (Redis's active expiry; reads already treat it as
//!   absent);
//! - subkeys and score entries (`S`, `Z`): an entry whose key has no live metadata of the same
//!   version (deleted, expired, overwritten by another type or by a newer version) is deleted.
//!
//! So DEL, EXPIRE and FLUSH-by-overwrite of a big hash cost one write on the command's path, and
//! the space comes back in the background.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use screedb::{ReadOptions, WriteBatch};

use crate::Shared;
use crate::encoding::{self, META, Meta, SCORE, SUB};
use crate::store::{Res, db_err, now_ms};

/// Entries looked at per range per round.
const BUDGET: usize = 1000;

pub(crate) async fn run(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(shared.config.sweep_interval);
    let mut cursors: [Option<Vec<u8>>; 2] = [None, None];
    loop {
        tick.tick().await;
        let s = Arc::clone(&shared);
        let c = cursors.clone();
        let done = tokio::task::spawn_blocking(move || {
            let meta = expire_round(&s, c[0].as_deref()).unwrap_or(None);
            let sub = collect_round(&s, c[1].as_deref()).unwrap_or(None);
            [meta, sub]
        })
        .await;
        if let Ok(next) = done {
            cursors = next;
        }
    }
}

/// Deletes expired keys among up to `BUDGET` metadata entries from `from`; where to go on.
fn expire_round(shared: &Shared, from: Option<&[u8]>) -> Res<Option<Vec<u8>>> {
    let now = now_ms();
    let mut it = shared
        .store
        .db()
        .iter(&ReadOptions::default())
        .map_err(db_err)?;
    it.seek(from.unwrap_or(&[META]));
    let mut expired = Vec::new();
    let mut looked = 0;
    while it.valid() && it.key().first() == Some(&META) && looked < BUDGET {
        looked += 1;
        if Meta::decode(it.value().to_vec()).is_some_and(|m| m.expired(now)) {
            expired.push(it.key().get(1..).unwrap_or_default().to_vec());
        }
        it.next();
    }
    it.status().map_err(db_err)?;
    let next = (it.valid() && it.key().first() == Some(&META)).then(|| it.key().to_vec());
    drop(it);
    for key in expired {
        let _lock = shared.store.lock(&key);
        // Look again under the lock: a write may have replaced it since.
        if shared
            .store
            .meta_raw(&key)?
            .is_some_and(|m| m.expired(now_ms()))
        {
            let mut batch = WriteBatch::new();
            batch.delete(encoding::meta_key(&key));
            shared.store.write(batch)?;
            shared.expired_keys.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(next)
}

/// Deletes orphaned subkeys and score entries among up to `BUDGET` from `from`.
fn collect_round(shared: &Shared, from: Option<&[u8]>) -> Res<Option<Vec<u8>>> {
    let now = now_ms();
    let mut it = shared
        .store
        .db()
        .iter(&ReadOptions::default())
        .map_err(db_err)?;
    it.seek(from.unwrap_or(&[SCORE.min(SUB)]));
    let in_range = |k: &[u8]| matches!(k.first(), Some(&t) if t == SUB || t == SCORE);
    let mut batch = WriteBatch::new();
    let mut looked = 0;
    // The last user key looked up and whether its version `.1` is live.
    let mut cache: Option<(Vec<u8>, u64, bool)> = None;
    while it.valid() && in_range(it.key()) && looked < BUDGET {
        looked += 1;
        let key = it.key();
        if let Some((user, version, _)) = encoding::split_versioned(key) {
            let live = match &cache {
                Some((u, v, live)) if u == user && *v == version => *live,
                _ => {
                    let live = shared
                        .store
                        .meta_raw(user)?
                        .is_some_and(|m| m.version == version && !m.expired(now));
                    cache = Some((user.to_vec(), version, live));
                    live
                }
            };
            if !live {
                batch.delete(key);
            }
        }
        it.next();
    }
    it.status().map_err(db_err)?;
    let next = (it.valid() && in_range(it.key())).then(|| it.key().to_vec());
    drop(it);
    shared.store.write(batch)?;
    Ok(next)
}

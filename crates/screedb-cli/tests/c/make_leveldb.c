/* Writes a LevelDB database with Debian's libleveldb for tests/import_leveldb.rs: versions of
 * keys in tables at several levels, deletions, and the newest writes only in the log.
 * Usage: make_leveldb DIR. The Rust test computes the same contents (`model` there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <leveldb/c.h>

static void check(char *err, const char *what) {
    if (err != NULL) {
        fprintf(stderr, "%s: %s\n", what, err);
        exit(1);
    }
}

static void put(leveldb_t *db, leveldb_writeoptions_t *wo, int i, const char *round) {
    char key[32], val[64];
    char *err = NULL;
    snprintf(key, sizeof key, "key%05d", i);
    snprintf(val, sizeof val, "%s-%d-payload-payload-payload", round, i);
    leveldb_put(db, wo, key, strlen(key), val, strlen(val), &err);
    check(err, "put");
}

static void del(leveldb_t *db, leveldb_writeoptions_t *wo, int i) {
    char key[32];
    char *err = NULL;
    snprintf(key, sizeof key, "key%05d", i);
    leveldb_delete(db, wo, key, strlen(key), &err);
    check(err, "delete");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    char *err = NULL;
    leveldb_options_t *opt = leveldb_options_create();
    leveldb_options_set_create_if_missing(opt, 1);
    leveldb_options_set_write_buffer_size(opt, 64 << 10); /* many small tables */
    leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
    leveldb_t *db = leveldb_open(opt, argv[1], &err);
    check(err, "open");
    for (int i = 0; i < 3000; i++) put(db, wo, i, "v1");
    leveldb_compact_range(db, NULL, 0, NULL, 0); /* down the levels */
    for (int i = 0; i < 3000; i += 3) put(db, wo, i, "v2");
    for (int i = 0; i < 3000; i += 7) del(db, wo, i);
    leveldb_close(db);
    /* A small write buffer would flush the next round: a larger one keeps it in the log. */
    leveldb_options_set_write_buffer_size(opt, 64 << 20);
    db = leveldb_open(opt, argv[1], &err);
    check(err, "reopen");
    for (int i = 0; i < 3000; i += 5) put(db, wo, i, "v3");
    del(db, wo, 1);
    put(db, wo, 7, "v4"); /* deleted above, back again */
    leveldb_close(db); /* LevelDB does not flush at close: these stay in the log */
    leveldb_writeoptions_destroy(wo);
    leveldb_options_destroy(opt);
    return 0;
}

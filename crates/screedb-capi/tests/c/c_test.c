/* The C API test of libscreedb: every function of include/screedb/c.h and every error path a
   caller can match on. Built and run by tests/c_program.rs (cargo test); exits non-zero with
   "file:line: condition" on the first failure.

   Usage: c_test   (databases go under leveldb_env_get_test_directory(), i.e. $TEST_TMPDIR) */

#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "screedb/c.h"

static const char* phase = "";

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "%s:%d: [%s] check failed: %s\n", __FILE__, __LINE__, phase, #cond); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

#define CHECK_NO_ERROR(err)                                                              \
  do {                                                                                   \
    if ((err) != NULL) {                                                                 \
      fprintf(stderr, "%s:%d: [%s] unexpected error: %s\n", __FILE__, __LINE__, phase, (err)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

/* Checks that *err is exactly `expected` (or starts with it if `prefix_only`), frees it and
   resets it to NULL. */
static void check_error_at(int line, char** err, const char* expected, int prefix_only) {
  int ok = *err != NULL && (prefix_only ? strncmp(*err, expected, strlen(expected)) == 0
                                        : strcmp(*err, expected) == 0);
  if (!ok) {
    fprintf(stderr, "line %d: [%s] expected error %s\"%s\", got \"%s\"\n", line, phase,
            prefix_only ? "starting with " : "", expected, *err ? *err : "(none)");
    exit(1);
  }
  leveldb_free(*err);
  *err = NULL;
}
#define CHECK_ERROR(err, expected) check_error_at(__LINE__, &(err), (expected), 0)
#define CHECK_ERROR_PREFIX(err, expected) check_error_at(__LINE__, &(err), (expected), 1)

static void check_get(leveldb_t* db, const leveldb_readoptions_t* ro, const char* key,
                      const char* expected) {
  char* err = NULL;
  size_t len = 12345;
  char* val = leveldb_get(db, ro, key, strlen(key), &len, &err);
  CHECK_NO_ERROR(err);
  if (expected == NULL) {
    CHECK(val == NULL);
    CHECK(len == 0);
  } else {
    CHECK(val != NULL);
    CHECK(len == strlen(expected));
    CHECK(memcmp(val, expected, len) == 0);
  }
  leveldb_free(val);
}

static void check_iter(leveldb_iterator_t* it, const char* key, const char* val) {
  size_t len;
  const char* p;
  CHECK(leveldb_iter_valid(it));
  p = leveldb_iter_key(it, &len);
  CHECK(len == strlen(key) && memcmp(p, key, len) == 0);
  p = leveldb_iter_value(it, &len);
  CHECK(len == strlen(val) && memcmp(p, val, len) == 0);
}

/* ---- write batch iteration ---- */

static char batch_log[256];

static void on_put(void* state, const char* k, size_t klen, const char* v, size_t vlen) {
  CHECK(state == (void*)batch_log);
  strcat(batch_log, "put(");
  strncat(batch_log, k, klen);
  strcat(batch_log, ",");
  strncat(batch_log, v, vlen);
  strcat(batch_log, ")");
}

static void on_delete(void* state, const char* k, size_t klen) {
  CHECK(state == (void*)batch_log);
  strcat(batch_log, "del(");
  strncat(batch_log, k, klen);
  strcat(batch_log, ")");
}

/* ---- a reverse-bytewise comparator ---- */

static int cmp_destroyed = 0;
static void cmp_destroy(void* state) { cmp_destroyed += state == (void*)&cmp_destroyed; }
static int cmp_compare(void* state, const char* a, size_t alen, const char* b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int r = memcmp(a, b, n);
  (void)state;
  if (r == 0) r = alen < blen ? -1 : alen > blen ? 1 : 0;
  return -r;
}
static const char* cmp_name(void* state) {
  (void)state;
  return "test.reverse";
}
static const char* cmp_other_name(void* state) {
  (void)state;
  return "test.other";
}

/* ---- a filter policy whose filter is a marker plus the key count ---- */

static int filter_destroyed = 0;
static char last_filter[64];
static size_t last_filter_len = 0;
static int filter_mismatches = 0;
static int filter_probes = 0;
static int filter_reject_all = 0;

static void filter_destroy(void* state) { filter_destroyed += state == (void*)&filter_destroyed; }
static char* filter_create(void* state, const char* const* keys, const size_t* lens, int n,
                           size_t* filter_len) {
  char* out = malloc(32);
  (void)state;
  (void)keys;
  (void)lens;
  snprintf(out, 32, "fake-filter:%d", n);
  *filter_len = strlen(out);
  memcpy(last_filter, out, *filter_len);
  last_filter_len = *filter_len;
  return out;
}
static uint8_t filter_match(void* state, const char* key, size_t len, const char* filter,
                            size_t filter_len) {
  (void)state;
  (void)key;
  (void)len;
  filter_probes++;
  if (filter_len != last_filter_len || memcmp(filter, last_filter, filter_len) != 0) {
    filter_mismatches++;
  }
  return !filter_reject_all;
}
static const char* filter_name(void* state) {
  (void)state;
  return "test.fake";
}

/* ---- helpers ---- */

static void dir_path(char* out, size_t n, const char* base, const char* leaf) {
  snprintf(out, n, "%s/%s", base, leaf);
}

/* Overwrites every table file of `dir` except its 48-byte footer. */
static int damage_tables(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* e;
  int damaged = 0;
  CHECK(d != NULL);
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".sst") == 0) {
      char path[1024];
      FILE* f;
      long size, at;
      dir_path(path, sizeof path, dir, e->d_name);
      f = fopen(path, "r+b");
      CHECK(f != NULL);
      fseek(f, 0, SEEK_END);
      size = ftell(f);
      fseek(f, 0, SEEK_SET);
      for (at = 0; at + 48 < size; at++) fputc('X', f);
      fclose(f);
      damaged++;
    }
  }
  closedir(d);
  return damaged;
}

/* ---- threads ---- */

struct thread_arg {
  leveldb_t* db;
  int id;
};

static void* writer_thread(void* p) {
  struct thread_arg* a = p;
  leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
  leveldb_readoptions_t* ro = leveldb_readoptions_create();
  char key[32], val[32];
  int i;
  for (i = 0; i < 500; i++) {
    char* err = NULL;
    size_t len;
    char* got;
    snprintf(key, sizeof key, "t%d-%04d", a->id, i);
    snprintf(val, sizeof val, "v%d", i);
    leveldb_put(a->db, wo, key, strlen(key), val, strlen(val), &err);
    CHECK_NO_ERROR(err);
    got = leveldb_get(a->db, ro, key, strlen(key), &len, &err);
    CHECK_NO_ERROR(err);
    CHECK(got != NULL && len == strlen(val) && memcmp(got, val, len) == 0);
    leveldb_free(got);
  }
  leveldb_writeoptions_destroy(wo);
  leveldb_readoptions_destroy(ro);
  return NULL;
}

int main(void) {
  leveldb_env_t* env;
  leveldb_cache_t* cache;
  leveldb_options_t* options;
  leveldb_readoptions_t* roptions;
  leveldb_writeoptions_t* woptions;
  leveldb_comparator_t* cmp;
  leveldb_filterpolicy_t* policy;
  leveldb_t* db;
  leveldb_t* db2;
  leveldb_writebatch_t* wb;
  leveldb_writebatch_t* wb2;
  leveldb_iterator_t* iter;
  const leveldb_snapshot_t* snap;
  char* err = NULL;
  char* sentinel;
  char* testdir;
  char dbname[512], cmpname[512], filtername[512], expected[1200], current[600];
  size_t len;
  char* prop;
  int i;

  phase = "version";
  CHECK(leveldb_major_version() == 1);
  CHECK(leveldb_minor_version() >= 20);

  phase = "env";
  env = leveldb_create_default_env();
  testdir = leveldb_env_get_test_directory(env);
  CHECK(testdir != NULL);
  snprintf(dbname, sizeof dbname, "%s/c_test-%d", testdir, (int)geteuid());
  snprintf(cmpname, sizeof cmpname, "%s/c_test-cmp-%d", testdir, (int)geteuid());
  snprintf(filtername, sizeof filtername, "%s/c_test-filter-%d", testdir, (int)geteuid());
  leveldb_free(testdir);

  phase = "options";
  cache = leveldb_cache_create_lru(100000);
  options = leveldb_options_create();
  leveldb_options_set_env(options, env);
  leveldb_options_set_info_log(options, NULL);
  leveldb_options_set_cache(options, cache);
  leveldb_options_set_write_buffer_size(options, 100000);
  leveldb_options_set_paranoid_checks(options, 1);
  leveldb_options_set_max_open_files(options, 10);
  leveldb_options_set_block_size(options, 1024);
  leveldb_options_set_block_restart_interval(options, 8);
  leveldb_options_set_max_file_size(options, 3 << 20);
  leveldb_options_set_compression(options, leveldb_no_compression);
  leveldb_options_set_compression(options, leveldb_snappy_compression);
  roptions = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(roptions, 1);
  leveldb_readoptions_set_fill_cache(roptions, 0);
  woptions = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(woptions, 1);

  phase = "destroy";
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);

  phase = "open_missing";
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  snprintf(expected, sizeof expected,
           "Invalid argument: %s: does not exist (create_if_missing is false)", dbname);
  CHECK_ERROR(err, expected);

  phase = "open";
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  CHECK(db != NULL);
  check_get(db, roptions, "foo", NULL);

  phase = "locked";
  db2 = leveldb_open(options, dbname, &err);
  CHECK(db2 == NULL);
  snprintf(expected, sizeof expected, "IO error: lock %s/LOCK: already held by process", dbname);
  CHECK_ERROR(err, expected);
  leveldb_destroy_db(options, dbname, &err);
  CHECK_ERROR(err, expected);
  leveldb_repair_db(options, dbname, &err);
  CHECK_ERROR(err, expected);

  phase = "put";
  sentinel = malloc(8);
  strcpy(sentinel, "keep");
  err = sentinel;
  leveldb_put(db, woptions, "foo", 3, "hello", 5, &err);
  CHECK(err == sentinel); /* success leaves *errptr alone */
  err = NULL;
  check_get(db, roptions, "foo", "hello");
  leveldb_put(db, woptions, "empty", 5, "", 0, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "empty", "");

  phase = "error_replaces_old_message";
  err = sentinel; /* a failure frees the old message and stores a new one */
  leveldb_put(NULL, woptions, "k", 1, "v", 1, &err);
  CHECK_ERROR(err, "Invalid argument: db is NULL");

  phase = "null_arguments";
  leveldb_put(db, woptions, NULL, 3, "v", 1, &err);
  CHECK_ERROR(err, "Invalid argument: key or value is NULL");
  CHECK(leveldb_get(db, roptions, NULL, 3, &len, &err) == NULL);
  CHECK_ERROR(err, "Invalid argument: key is NULL");
  leveldb_delete(db, NULL, "k", 1, &err);
  CHECK_ERROR(err, "Invalid argument: write options is NULL");
  leveldb_write(db, woptions, NULL, &err);
  CHECK_ERROR(err, "Invalid argument: write batch is NULL");
  CHECK(leveldb_open(NULL, dbname, &err) == NULL);
  CHECK_ERROR(err, "Invalid argument: options is NULL");
  CHECK(leveldb_open(options, NULL, &err) == NULL);
  CHECK_ERROR(err, "Invalid argument: database name is NULL");
  CHECK(leveldb_create_iterator(NULL, roptions) == NULL);
  CHECK(leveldb_property_value(NULL, "leveldb.stats") == NULL);
  leveldb_free(NULL);

  phase = "key_too_large";
  {
    size_t big = (64u << 20) + 1;
    char* k = calloc(big, 1);
    CHECK(k != NULL);
    leveldb_put(db, woptions, k, big, "v", 1, &err);
    CHECK_ERROR_PREFIX(err, "Invalid argument: key of ");
    free(k);
  }

  phase = "compact_all";
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  check_get(db, roptions, "foo", "hello");

  phase = "compact_range";
  leveldb_compact_range(db, "a", 1, "z", 1);
  check_get(db, roptions, "foo", "hello");

  phase = "writebatch";
  wb = leveldb_writebatch_create();
  leveldb_writebatch_put(wb, "foo", 3, "a", 1);
  leveldb_writebatch_clear(wb);
  leveldb_writebatch_put(wb, "bar", 3, "b", 1);
  leveldb_writebatch_put(wb, "box", 3, "c", 1);
  wb2 = leveldb_writebatch_create();
  leveldb_writebatch_delete(wb2, "bar", 3);
  leveldb_writebatch_append(wb, wb2);
  leveldb_writebatch_destroy(wb2);
  leveldb_write(db, woptions, wb, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "foo", "hello");
  check_get(db, roptions, "bar", NULL);
  check_get(db, roptions, "box", "c");
  batch_log[0] = 0;
  leveldb_writebatch_iterate(wb, batch_log, on_put, on_delete);
  CHECK(strcmp(batch_log, "put(bar,b)put(box,c)del(bar)") == 0);
  leveldb_writebatch_destroy(wb);

  phase = "iter";
  iter = leveldb_create_iterator(db, roptions);
  CHECK(!leveldb_iter_valid(iter));
  CHECK(leveldb_iter_key(iter, &len) == NULL && len == 0);
  leveldb_iter_seek_to_first(iter);
  check_iter(iter, "box", "c");
  leveldb_iter_next(iter);
  check_iter(iter, "empty", "");
  leveldb_iter_next(iter);
  check_iter(iter, "foo", "hello");
  leveldb_iter_prev(iter);
  check_iter(iter, "empty", "");
  leveldb_iter_prev(iter);
  check_iter(iter, "box", "c");
  leveldb_iter_prev(iter);
  CHECK(!leveldb_iter_valid(iter));
  leveldb_iter_seek_to_last(iter);
  check_iter(iter, "foo", "hello");
  leveldb_iter_seek(iter, "b", 1);
  check_iter(iter, "box", "c");
  leveldb_iter_seek(iter, "zzz", 3);
  CHECK(!leveldb_iter_valid(iter));
  leveldb_iter_get_error(iter, &err);
  CHECK_NO_ERROR(err);
  leveldb_iter_destroy(iter);

  phase = "approximate_sizes";
  {
    char keybuf[100], valbuf[100];
    uint64_t sizes[2];
    const char* start[2] = {"a", "k00000000000000010000"};
    size_t start_len[2] = {1, 21};
    const char* limit[2] = {"k00000000000000010000", "z"};
    size_t limit_len[2] = {21, 1};
    leveldb_writeoptions_set_sync(woptions, 0);
    for (i = 0; i < 20000; i++) {
      snprintf(keybuf, sizeof keybuf, "k%020d", i);
      snprintf(valbuf, sizeof valbuf, "v%020d", i);
      leveldb_put(db, woptions, keybuf, strlen(keybuf), valbuf, strlen(valbuf), &err);
      CHECK_NO_ERROR(err);
    }
    leveldb_compact_range(db, NULL, 0, NULL, 0);
    leveldb_approximate_sizes(db, 2, start, start_len, limit, limit_len, sizes);
    CHECK(sizes[0] > 0);
    CHECK(sizes[1] > 0);
    for (i = 0; i < 20000; i++) {
      snprintf(keybuf, sizeof keybuf, "k%020d", i);
      leveldb_delete(db, woptions, keybuf, strlen(keybuf), &err);
      CHECK_NO_ERROR(err);
    }
    sizes[0] = 7;
    leveldb_approximate_sizes(db, 0, start, start_len, limit, limit_len, sizes);
    CHECK(sizes[0] == 7); /* no ranges, nothing written */
  }

  phase = "property";
  prop = leveldb_property_value(db, "nosuchprop");
  CHECK(prop == NULL);
  prop = leveldb_property_value(db, "leveldb.nosuchprop");
  CHECK(prop == NULL);
  prop = leveldb_property_value(db, "leveldb.stats");
  CHECK(prop != NULL && strlen(prop) > 0);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "leveldb.num-files-at-level0");
  CHECK(prop != NULL && atoi(prop) >= 0);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "leveldb.sstables");
  CHECK(prop != NULL);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "leveldb.approximate-memory-usage");
  CHECK(prop != NULL && atol(prop) >= 0);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "screedb.write-amplification");
  CHECK(prop != NULL);
  leveldb_free(prop);

  phase = "snapshot";
  snap = leveldb_create_snapshot(db);
  leveldb_delete(db, woptions, "foo", 3, &err);
  CHECK_NO_ERROR(err);
  leveldb_readoptions_set_snapshot(roptions, snap);
  check_get(db, roptions, "foo", "hello");
  iter = leveldb_create_iterator(db, roptions);
  leveldb_iter_seek(iter, "foo", 3);
  check_iter(iter, "foo", "hello");
  leveldb_iter_destroy(iter);
  leveldb_readoptions_set_snapshot(roptions, NULL);
  check_get(db, roptions, "foo", NULL);
  leveldb_release_snapshot(db, snap);

  phase = "threads";
  {
    pthread_t t[4];
    struct thread_arg a[4];
    for (i = 0; i < 4; i++) {
      a[i].db = db;
      a[i].id = i;
      CHECK(pthread_create(&t[i], NULL, writer_thread, &a[i]) == 0);
    }
    for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
    check_get(db, roptions, "t3-0499", "v499");
  }

  phase = "repair";
  leveldb_close(db);
  leveldb_options_set_create_if_missing(options, 0);
  leveldb_options_set_error_if_exists(options, 0);
  dir_path(current, sizeof current, dbname, "CURRENT");
  CHECK(unlink(current) == 0);
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  snprintf(expected, sizeof expected,
           "Invalid argument: %s: does not exist (create_if_missing is false)", dbname);
  CHECK_ERROR(err, expected);
  leveldb_repair_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "foo", NULL);
  check_get(db, roptions, "box", "c");
  check_get(db, roptions, "t0-0000", "v0");
  leveldb_close(db);
  {
    char missing[600];
    dir_path(missing, sizeof missing, dbname, "no-such-dir");
    leveldb_repair_db(options, missing, &err);
    CHECK_ERROR_PREFIX(err, "IO error: ");
  }

  phase = "error_if_exists";
  leveldb_options_set_error_if_exists(options, 1);
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  snprintf(expected, sizeof expected, "Invalid argument: %s: exists (error_if_exists is true)",
           dbname);
  CHECK_ERROR(err, expected);
  leveldb_options_set_error_if_exists(options, 0);

  phase = "corruption";
  CHECK(damage_tables(dbname) > 0);
  db = leveldb_open(options, dbname, &err);
  if (db == NULL) {
    CHECK_ERROR_PREFIX(err, "Corruption: ");
  } else {
    size_t vlen;
    char* v = leveldb_get(db, roptions, "t1-0100", 7, &vlen, &err);
    CHECK(v == NULL);
    CHECK_ERROR_PREFIX(err, "Corruption: ");
    iter = leveldb_create_iterator(db, roptions);
    leveldb_iter_seek_to_first(iter);
    while (leveldb_iter_valid(iter)) leveldb_iter_next(iter);
    leveldb_iter_get_error(iter, &err);
    CHECK_ERROR_PREFIX(err, "Corruption: ");
    leveldb_iter_destroy(iter);
    leveldb_close(db);
  }
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  CHECK(access(dbname, F_OK) != 0 || access(current, F_OK) != 0);

  phase = "comparator";
  cmp = leveldb_comparator_create(&cmp_destroyed, cmp_destroy, cmp_compare, cmp_name);
  leveldb_destroy_db(options, cmpname, &err);
  CHECK_NO_ERROR(err);
  leveldb_options_set_comparator(options, cmp);
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, cmpname, &err);
  CHECK_NO_ERROR(err);
  leveldb_put(db, woptions, "a", 1, "1", 1, &err);
  leveldb_put(db, woptions, "b", 1, "2", 1, &err);
  leveldb_put(db, woptions, "c", 1, "3", 1, &err);
  CHECK_NO_ERROR(err);
  iter = leveldb_create_iterator(db, roptions);
  leveldb_iter_seek_to_first(iter);
  check_iter(iter, "c", "3"); /* reverse order */
  leveldb_iter_seek_to_last(iter);
  check_iter(iter, "a", "1");
  leveldb_iter_destroy(iter);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  check_get(db, roptions, "b", "2");
  leveldb_close(db);
  leveldb_options_set_comparator(options, NULL);
  leveldb_comparator_destroy(cmp);
  CHECK(cmp_destroyed == 1);
  cmp = leveldb_comparator_create(NULL, NULL, cmp_compare, cmp_other_name);
  leveldb_options_set_comparator(options, cmp);
  db = leveldb_open(options, cmpname, &err);
  CHECK(db == NULL);
  CHECK_ERROR(err,
              "Invalid argument: test.reverse does not match existing comparator : test.other");
  leveldb_options_set_comparator(options, NULL);
  leveldb_comparator_destroy(cmp);
  leveldb_destroy_db(options, cmpname, &err);
  CHECK_NO_ERROR(err);

  phase = "filter";
  for (i = 0; i < 2; i++) {
    policy = i == 0 ? leveldb_filterpolicy_create(&filter_destroyed, filter_destroy, filter_create,
                                                  filter_match, filter_name)
                    : leveldb_filterpolicy_create_bloom(10);
    leveldb_destroy_db(options, filtername, &err);
    CHECK_NO_ERROR(err);
    leveldb_options_set_filter_policy(options, policy);
    db = leveldb_open(options, filtername, &err);
    CHECK_NO_ERROR(err);
    leveldb_put(db, woptions, "foo", 3, "foovalue", 8, &err);
    leveldb_put(db, woptions, "bar", 3, "barvalue", 8, &err);
    CHECK_NO_ERROR(err);
    leveldb_compact_range(db, NULL, 0, NULL, 0);
    filter_reject_all = 0;
    check_get(db, roptions, "foo", "foovalue");
    check_get(db, roptions, "bar", "barvalue");
    if (i == 0) {
      CHECK(last_filter_len > 0);
      CHECK(filter_probes > 0);
      CHECK(filter_mismatches == 0); /* match saw exactly the bytes create produced */
      filter_reject_all = 1;         /* the filter is consulted: a rejecting one hides keys */
      check_get(db, roptions, "foo", NULL);
      filter_reject_all = 0;
    }
    leveldb_close(db);
    leveldb_options_set_filter_policy(options, NULL);
    leveldb_filterpolicy_destroy(policy);
    leveldb_destroy_db(options, filtername, &err);
    CHECK_NO_ERROR(err);
  }
  CHECK(filter_destroyed == 1);

  phase = "cleanup";
  leveldb_options_destroy(options);
  leveldb_readoptions_destroy(roptions);
  leveldb_writeoptions_destroy(woptions);
  leveldb_cache_destroy(cache);
  leveldb_env_destroy(env);

  fprintf(stderr, "PASS\n");
  return 0;
}

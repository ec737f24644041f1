/*
** rpt.h: reports of a finished run.
**
** reports/ renders what a run left behind (its summary, violations and
** trace) as terminal text, a results JSON document, JUnit XML for CI, a
** Chrome Trace Event timeline for Perfetto and a repro file. It reads the
** trace vocabulary of runtime/rt_events.h and the violations of
** checks/chk.h; it never includes scenarios/ or cli/ (they sit above it).
** Every writer is deterministic: the same run gives the same bytes (the
** wall time appears only in the terminal text and the JUnit times).
** The formats are documented in docs/reports.md.
*/
#ifndef RPT_H
#define RPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "checks/chk.h"
#include "checks/chk_facts.h"
#include "sim/sim_trace.h"

/* One measured figure of a run, e.g. {"recovery_ms_p50", 1200, "ms"}. */
typedef struct rpt_figure {
  const char *name;              /* key; [a-z0-9_] recommended */
  int64_t value;
  const char *unit;              /* NULL or "" for a plain count */
} rpt_figure;

/* A finished run. Nothing here is owned by reports/: every pointer is the
** caller's and must stay valid during the call. NULL strings are allowed
** everywhere except where noted. */
typedef struct rpt_run {
  const char *scenario_name, *scenario_file;
  uint64_t seed;
  const char *strategy;          /* scheduler strategy name ("random") */
  const char *variant;           /* e.g. "toolrun=gated heartbeat=alarm" */
  uint64_t trace_hash;
  uint64_t events;               /* trace records appended */
  int64_t end_us;                /* virtual time at the end of the run */
  int passed;                    /* every expectation met */
  const char *expect;            /* "hold: no_wedge, recovery_finishes" */
  const char *failure;           /* NULL, or why the expectation failed */
  const chk_violation *violations;
  size_t n_violations;
  const sim_trace *trace;        /* kept records + strings; may be NULL */
  const char *const *actor_names;/* actor index -> name; may be NULL */
  uint32_t n_actors;
  const rpt_figure *figures;
  size_t n_figures;
  const chk_facts *facts;        /* the case's facts and verdicts; may be NULL */
  const uint32_t *probes;        /* RT_PROBE_COUNT counts of the probes the run
                                    reached (rt_events.h); may be NULL */
  const char *replay;            /* the command that replays this run */
  uint64_t crash_at;             /* run --crash-at K: the crash point (0: none);
                                    a repro file records it as "crash_at" */
  double wall_s;                 /* wall seconds of the run (report only) */
} rpt_run;

/* Writes the terminal report of one run to f. Always one line
**   PASS <name> seed=0x2a <strategy> <events> events <end> hash=0x<16 hex>
** (FAIL for a failed run); a passed run with violations ends
** " no_wedge, recovery_finishes violated as expected" (those expect.violate
** lists; the others follow as "... violated (not judged: not in expect)"). A failed run adds
** the failure text, the expectation, the variant, each violation (the
** repeats of one invariant on one actor merged into one with a count:
** invariant, actor, time,
** message and its chain of trace records decoded per kind), a "who waits
** on whom" block for no_wedge / recovery_finishes violations, and the
** replay command. verbose=1 adds the figures and wall time, and a one-line
** note per (expected) violation of a passed run. color=1 uses ANSI colour
** escapes; color=0 writes none. Chains need r->trace with kept records;
** without them only the record indices are shown. */
void rpt_text_run(FILE *f, const rpt_run *r, int verbose, int color);

/* Writes one record as a line "t=30.000s agent kind field=value ...\n"
** (the fields named by the runtime's field table; r gives actor names and
** the trace's strings). */
void rpt_record_text(FILE *f, const rpt_run *r, const sim_rec *rec);

/* Writes one record as a JSON object on one line: "index", "t_us", "kind",
** "actor", then its fields (enum names, actor ids, JSON fields embedded).
** Returns 0, or -1 on OOM. */
int rpt_record_jsonl(FILE *f, const rpt_run *r, const sim_rec *rec, uint64_t index);

/* Writes the closing line "<passed> passed, <failed> failed\n" to f. */
void rpt_text_summary(FILE *f, size_t passed, size_t failed);

/* Writes one results JSON document (schema "revenant.results/1", fixed key
** order, docs/reports.md) for runs[0..n) to f, built and printed with
** cJSON. 64-bit values that may exceed 10^15 (seed, hash) are hex strings;
** other integers are numbers below 10^15 and decimal strings above.
** Returns 0, or -1 on OOM or a write error. */
int rpt_json_write(FILE *f, const rpt_run *runs, size_t n);

/* A scenario file that could not be loaded, for the reports that count
** load errors (JSON "errors", JUnit <error>, the summary line). */
typedef struct rpt_load_error {
  const char *file;
  const char *message;           /* "file:line:col: what" */
} rpt_load_error;

/* The results JSON written one run at a time (same bytes as
** rpt_json_write for the same runs): rpt_json_begin, rpt_json_add per run
** (r is not kept: it may be freed right after), then rpt_json_end, which
** adds "errors": [{"file","message"}] and summary.errors when n_err > 0.
** rpt_json_end returns 0, or -1 if anything failed (OOM, write error). */
typedef struct rpt_json_stream {
  FILE *f;
  size_t n, passed;
  int err;
} rpt_json_stream;
void rpt_json_begin(rpt_json_stream *w, FILE *f);
void rpt_json_add(rpt_json_stream *w, const rpt_run *r);
int rpt_json_end(rpt_json_stream *w, const rpt_load_error *errs, size_t n_err);

/* Writes JUnit XML for runs[0..n) to f: one <testsuite name="revenant">,
** one <testcase> per run with classname "revenant.<file stem or name>"
** and name "<scenario> seed=0x..", a <failure type="ExpectationFailed">
** for failed runs whose text is the terminal report (failure, violations,
** chains, replay). Output is well-formed XML (xmllint --noout): attributes
** are escaped, invalid UTF-8 and control bytes are replaced, "]]>" is
** split. Returns 0, or -1 on OOM or a write error. */
int rpt_junit_write(FILE *f, const rpt_run *runs, size_t n);

/* JUnit XML written one run at a time: the test cases go to a temporary
** file until rpt_junit_end writes the header with the counts, the cases,
** and one <testcase> with an <error type="LoadError"> per load error
** (counted in errors="N"). `disambiguate` adds the strategy and variant to
** the test name (rpt_junit_write does so when another run has the same
** scenario and seed). rpt_junit_begin returns 0 or -1 (no temporary
** file); rpt_junit_end returns 0, or -1 if anything failed. */
typedef struct rpt_junit_stream {
  FILE *f, *body;
  size_t n, failed;
  double total_s;
  int err;
} rpt_junit_stream;
int rpt_junit_begin(rpt_junit_stream *w, FILE *f);
void rpt_junit_add(rpt_junit_stream *w, const rpt_run *r, int disambiguate);
int rpt_junit_end(rpt_junit_stream *w, const rpt_load_error *errs, size_t n_err);

/* Writes the closing line with load errors:
** "<passed> passed, <failed> failed, <errors> error(s)\n" (the plain
** rpt_text_summary line when errors is 0). */
void rpt_text_summary_errors(FILE *f, size_t passed, size_t failed, size_t errors);

/* Writes r's trace as Chrome Trace Event JSON for Perfetto
** (ui.perfetto.dev, "Open trace file"): per actor a gate track and a work
** track (requests, startup, alarm handlers) of complete "X" slices that
** are disjoint or nested by construction, fibers and crossing spans as
** async b/e pairs, instants for faults, deaths, alarm fires and recovery
** hand-overs, and a counter of pending waitUntil / keepAlive refs per
** actor. ts are virtual µs. Needs r->trace with kept records (a trace of
** metadata only is written otherwise). Returns 0, or -1 on OOM or a write
** error. */
int rpt_trace_write(FILE *f, const rpt_run *r);

/* Writes a repro file for r to f: {"revenant_repro":1,"scenario":{..},
** "seed","strategy","variant","trace_hash","expect","faults":[..]}.
** scenario_json is the scenario file's text (comments allowed); it must
** hold one JSON object, which is embedded verbatim after comments and
** whitespace are removed (so large integers keep every digit). faults
** lists every RT_EV_FAULT record of r->trace. Returns 0, or -1 when
** scenario_json is NULL or not a JSON object, on OOM or a write error. */
int rpt_repro_write(FILE *f, const rpt_run *r, const char *scenario_json);

/* Recovery times of a trace: an episode starts at an RT_EV_ACTOR_DEATH of
** an actor that had orphan fibers (started, not done) or stale tool runs
** (inserted, not terminal); deaths during an open episode add their
** orphans but keep its start. The episode ends when every orphan got
** RT_EV_FIBER_RECOVERED and every stale run a terminal
** RT_EV_TOOLRUN_STATUS; its time (end - start, µs) is stored in out_us in
** the order episodes end. Episodes still open at the end are left out.
** At most cap values are stored; *n receives the number stored. t may be
** NULL (then *n = 0). */
void rpt_recovery_times(const sim_trace *t, int64_t *out_us, size_t *n,
                        size_t cap);

/* rpt_recovery_times fed record by record, for a run that keeps no trace:
** rpt_recovery_observe is a sim_trace observer (ctx: the stream) and
** rpt_recovery_stream_end frees the stream and returns how many times it
** stored in out_us (at most cap). _new returns NULL on OOM. */
typedef struct rpt_recovery_stream rpt_recovery_stream;
rpt_recovery_stream *rpt_recovery_stream_new(int64_t *out_us, size_t cap);
void rpt_recovery_observe(void *ctx, const sim_rec *r, uint64_t index);
size_t rpt_recovery_stream_end(rpt_recovery_stream *st);

/* Writes "n=<n> min=<ms> p50=<ms> p90=<ms> p99=<ms> max=<ms>\n" (values
** in milliseconds with three decimals, nearest-rank percentiles) for
** v[0..n), or "n=0\n". v is not modified. */
void rpt_distribution(FILE *f, const int64_t *v, size_t n);

/* ---- the HTML report (rpt_html.c, docs/reports.md) ------------------- */

/* One failure signature of a swarm. */
typedef struct rpt_swarm_sig {
  const char *signature;         /* "no_wedge/parent/gate_reset" */
  const char *scenario, *case_label;
  uint64_t count;                /* failed runs with this signature */
  uint64_t first_seed;           /* the smallest such seed */
  const char *replay;            /* command that replays first_seed */
} rpt_swarm_sig;

/* Runs of a swarm in which a fault kind was injected at least once. */
typedef struct rpt_swarm_kind {
  const char *kind;              /* the fault kind ("sigkill") */
  uint64_t runs, failed;         /* runs that had it; of those, failed */
  uint64_t faults;               /* injections over all runs */
} rpt_swarm_kind;

/* One runtime probe (docs/trace.md "Probes") over a swarm: how many runs
** reached it and the first of them (runs == 0: no run reached it). */
typedef struct rpt_swarm_probe {
  const char *name;              /* "commit_window_death" */
  uint64_t runs;
  uint64_t first_seed;           /* valid when runs > 0 */
  const char *scenario, *case_label; /* of the first run; NULL when runs == 0 */
} rpt_swarm_probe;

/* What a swarm found, for its HTML page. Pointers are the caller's. */
typedef struct rpt_swarm {
  const char *title;             /* e.g. the command line; may be NULL */
  uint64_t runs, failed, seeds;
  const rpt_swarm_sig *sigs;
  size_t n_sigs;
  const int64_t *recovery_us;    /* recovery times of every run (µs) */
  size_t n_recovery;
  const rpt_swarm_kind *kinds;
  size_t n_kinds;
  const rpt_swarm_probe *probes; /* every runtime probe, reached or not; may be NULL */
  size_t n_probes;
} rpt_swarm;

/* Limits of the HTML report. */
typedef struct rpt_html_opts {
  uint64_t max_records;          /* records kept per run after folding;
                                    0: RPT_HTML_MAX_RECORDS */
  uint64_t max_bytes;            /* estimated bytes of a run's data;
                                    0: RPT_HTML_MAX_BYTES */
} rpt_html_opts;

/* Default budget per run: at most 40,000 records and about 4 MB of data
** (records with their strings and spans), so that a run's page stays
** under 5 MB. Only plain stretches without a chain record are folded to
** meet it: a run whose chains alone exceed it is kept whole. */
#define RPT_HTML_MAX_RECORDS 40000
#define RPT_HTML_MAX_BYTES 4000000

/* Writes one self-contained HTML page (inline CSS and JavaScript, no
** network) to f: the swarm's page when swarm is not NULL, and a timeline
** page per run of runs[0..n) with a picker between them. A run's data is
** its header (scenario, case, seed, strategy, hash, replay command), its
** violations with chains and the wait-for edges at their time (replayed
** from the trace), the spans per actor and the trace records decoded per
** kind; long repeating stretches of the trace are folded (never a
** segment holding a chain record) and, past opts->max_records, plain
** stretches too. The data is JSON inside a <script type=
** "application/json"> element, with '<', '>' and '&' escaped so that no
** string can end the element. opts may be NULL. Deterministic: the same
** input gives the same bytes. Returns 0, or -1 on OOM or a write error. */
int rpt_html_write(FILE *f, const rpt_run *runs, size_t n, const rpt_swarm *swarm,
                   const rpt_html_opts *opts);

/* The same page streamed run by run (the same bytes as rpt_html_write for
** the same runs, title and swarm): rpt_html_begin (title: the page's
** <title> after "revenant: ", NULL for "report"; opts may be NULL),
** rpt_html_add per run (r is not kept: it may be freed right after), then
** rpt_html_end with the swarm or NULL, which returns 0, or -1 if anything
** failed (OOM, write error). */
typedef struct rpt_html_stream {
  FILE *f;
  size_t n;
  uint64_t max_records, max_bytes;
  int err;
} rpt_html_stream;

void rpt_html_begin(rpt_html_stream *w, FILE *f, const char *title, const rpt_html_opts *opts);
void rpt_html_add(rpt_html_stream *w, const rpt_run *r);
int rpt_html_end(rpt_html_stream *w, const rpt_swarm *swarm);

#endif

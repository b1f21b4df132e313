"""crosstrain.results against what crosstrain wrote: dumps made by the agent under the real
`crosstrain run`, `compare --json` of them, and `analyze --json` of a real profile. Every value the
reader gives is checked against the files and documents themselves. CROSSTRAIN_BINARY names the
front (CTest sets it; by hand it defaults to build/crosstrain)."""
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
from crosstrain import results  # noqa: E402

BINARY = os.environ.get("CROSSTRAIN_BINARY") or os.path.join(REPO, "build", "crosstrain")
SCRIPT = """
import sys, torch, torch.nn as nn
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(sys.argv[1])):
    x = torch.randn(5, 8); y = torch.randint(0, 4, (5,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
WORK = None


def crosstrain(*args, ok=(0,)):
    r = subprocess.run([BINARY, *args], cwd=WORK, capture_output=True, text=True, timeout=600)
    if r.returncode not in ok:
        raise AssertionError(f"crosstrain {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def path(*parts):
    return os.path.join(WORK, *parts)


def lines(p):
    with open(p) as f:
        return [json.loads(l) for l in f if l.strip()]


def load(p):
    with open(p) as f:
        return json.load(f)


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="crosstrain_results_test_")
    with open(path("train.py"), "w") as f:
        f.write(SCRIPT)
    for name, seed in (("a", "0"), ("b", "1")):
        crosstrain("run", "--seed", seed, "--dump", name, "--dump-level", "both", "--dump-mode", "tensors",
                   "--dump-steps", "0-1", "--", sys.executable, "train.py", "3")
    shutil.copytree(path("a"), path("a_again"))
    crosstrain("compare", "a", "b", "--json", "differ.json", ok=(1,))
    crosstrain("compare", "a", "a_again", "--json", "agree.json")
    for side, source in (("ra", "a"), ("rb", "b")):  # two folders of rank dumps: rank 0 agrees, rank 1 differs
        shutil.copytree(path("a"), path(side, "rank0"))
        shutil.copytree(path(source), path(side, "rank1"))
    crosstrain("compare", "ra", "rb", "--json", "ranks.json", ok=(1,))
    crosstrain("run", "--profile", "prof", "--profile-repeat", "2", "--", sys.executable, "train.py", "12")
    crosstrain("analyze", "prof", "--json", "prof.json")
    crosstrain("analyze", "--diff", "prof/cycle0/rank0.pt.trace.json", "prof/cycle1/rank0.pt.trace.json",
               "--json", "diff.json")


def tearDownModule():
    if os.environ.get("CROSSTRAIN_KEEP_TEST_DIRS") != "1":
        shutil.rmtree(WORK, ignore_errors=True)


def same_number(x, y):
    return (x is None and y is None) or (x is not None and y is not None and (x == y or math.isnan(x) and math.isnan(y)))


class DumpReaderTest(unittest.TestCase):
    def test_records_header_losses_and_run_are_the_files(self):
        dump = results.read_dump(path("a"))
        index = lines(path("a", "index.jsonl"))
        self.assertEqual(dump.header.format, index[0]["format"])
        self.assertEqual((dump.header.version, dump.header.mode, dump.header.producer),
                         (index[0]["version"], "tensors", index[0]["producer"]))
        self.assertEqual(len(dump.records), len(index) - 1)
        self.assertEqual(len(dump.records), dump.run["records"])  # run.json, as the agent counted
        for rec, j in zip(dump.records, index[1:]):
            self.assertEqual((rec.seq, rec.step, rec.name, rec.kind, rec.dtype, list(rec.shape)),
                             (j["seq"], j["step"], j["name"], j["kind"], j["dtype"], j["shape"]))
            for k in ("max", "min", "mean", "norm", "nan_count", "inf_count"):
                self.assertTrue(same_number(getattr(rec.stats, k), j["stats"][k]), (rec.name, k))
            self.assertEqual(rec.file, j["file"])
            self.assertEqual(rec.op is None, "op" not in j)
            if rec.op is not None:
                self.assertEqual((rec.op.name, rec.op.phase, rec.op.module, rec.op.source),
                                 (j["op"]["name"], j["op"]["phase"], j["op"]["module"], j["op"]["source"]))
                self.assertEqual([i.source_record for i in rec.op.inputs], [i.get("from") for i in j["op"]["inputs"]])
        self.assertEqual(dump.steps, [0, 1])
        self.assertEqual([(p.step, p.loss) for p in dump.losses],
                         [(j["step"], j["loss"]) for j in lines(path("a", "loss.jsonl"))])
        self.assertEqual([p.step for p in dump.losses], [0, 1, 2])

    def test_a_tensor_is_its_npy_and_matches_its_statistics(self):
        dump = results.read_dump(path("a"))
        rec = dump.record("forward/0", step=1)
        t = dump.tensor(rec)
        self.assertEqual(tuple(t.shape), rec.shape)
        self.assertAlmostEqual(float(t.max()), rec.stats.max, places=6)
        self.assertAlmostEqual(float((t.astype("float64") ** 2).sum() ** 0.5), rec.stats.norm, places=4)
        with self.assertRaises(KeyError):
            dump.record("forward/0", step=2)  # step 2 was not dumped

    def test_tables_are_dataframes_or_lists_of_the_same_rows(self):
        dump = results.read_dump(path("a"))
        rows = dump.records_table(frame=False)
        self.assertEqual([r["name"] for r in rows], [r.name for r in dump.records])
        self.assertEqual(rows[0]["source"], dump.records[0].op.source if dump.records[0].op else None)
        if results.have_pandas():
            frame = dump.records_table()
            self.assertEqual(list(frame["name"]), [r["name"] for r in rows])
            self.assertEqual(list(frame.columns), list(rows[0].keys()))
        saved = sys.modules.get("pandas")
        sys.modules["pandas"] = None  # `import pandas` now fails, as where it is not installed
        try:
            self.assertFalse(results.have_pandas())
            self.assertEqual(dump.losses_table(), [{"step": p.step, "loss": p.loss} for p in dump.losses])
            with self.assertRaises(ImportError):
                dump.losses_table(frame=True)
        finally:
            if saved is None:
                del sys.modules["pandas"]
            else:
                sys.modules["pandas"] = saved

    def test_rank_folders_are_read_by_rank_and_refused_as_one_dump(self):
        ranks = results.read_rank_dumps(path("ra"))
        self.assertEqual(sorted(ranks), [0, 1])
        self.assertEqual(len(ranks[1].records), len(results.read_dump(path("a")).records))
        with self.assertRaisesRegex(FileNotFoundError, "read_rank_dumps"):
            results.read_dump(path("ra"))

    def test_a_cut_last_line_is_left_out_and_a_newer_format_refused(self):
        cut = path("cut")
        shutil.copytree(path("a"), cut)
        with open(os.path.join(cut, "index.jsonl"), "a") as f:
            f.write('{"seq": 999, "step": 1, "na')  # a crash in the middle of a record
        self.assertEqual(len(results.read_dump(cut).records), len(results.read_dump(path("a")).records))
        index = lines(path("a", "index.jsonl"))
        index[0]["version"] = 2
        with open(os.path.join(cut, "index.jsonl"), "w") as f:
            f.write("".join(json.dumps(j) + "\n" for j in index))
        with self.assertRaisesRegex(ValueError, "format version 2"):
            results.read_dump(cut)


class CompareReaderTest(unittest.TestCase):
    def test_verdict_counts_and_first_divergence_are_the_document(self):
        doc = load(path("differ.json"))
        c = results.read_compare(path("differ.json"))
        self.assertEqual((c.agree, c.verdict, c.input), (False, "differ", "dumps"))
        counts = doc["counts"]
        self.assertEqual((c.counts.records, c.counts.passed, c.counts.warned, c.counts.errors, c.counts.exact),
                         (counts["records"], counts["pass"], counts["warn"], counts["error"], counts["exact"]))
        self.assertGreater(c.counts.errors, 0)
        fd = doc["first_divergence"]
        self.assertEqual((c.first_divergence.name, c.first_divergence.step, c.first_divergence.reason),
                         (fd["name"], fd["step"], fd["reason"]))
        self.assertEqual(c.first_divergence.origin.source, fd["origin"]["source"])
        self.assertEqual(c.tensors[c.first_divergence.index].name, fd["name"])
        self.assertEqual(c.divergence_window, doc["divergence_window"])

    def test_records_carry_both_sides_as_the_dumps_hold_them(self):
        c = results.read_compare(path("differ.json"))
        doc = load(path("differ.json"))
        a, b = results.read_dump(path("a")), results.read_dump(path("b"))
        self.assertEqual(len(c.tensors), len(a.records))
        for t, j in zip(c.tensors, doc["tensors"]):
            self.assertEqual((t.name, t.step, t.verdict, t.status, t.method), (j["name"], j["step"], j["verdict"],
                                                                               j["status"], j["method"]))
            self.assertTrue(same_number(t.a.stats.max, j["a"]["stats"]["max"]))
            self.assertTrue(same_number(t.b.stats.norm, j["b"]["stats"]["norm"]))
            # compare read the same dumps (its JSON scanner's decimal parse may be 1 ulp off Python's)
            self.assertTrue(math.isclose(t.a.stats.max, a.record(t.name, t.step).stats.max, rel_tol=1e-15))
            self.assertTrue(math.isclose(t.b.stats.norm, b.record(t.name, t.step).stats.norm, rel_tol=1e-15))
            self.assertEqual(t.noise.error_at, j["noise"]["error_at"])
            self.assertIsNotNone(t.metrics)  # tensors mode on both sides: element-wise metrics
            self.assertTrue(same_number(t.metrics.cosine, j["metrics"]["cosine"]))
        table = c.tensors_table(frame=False)
        self.assertEqual([(r["name"], r["verdict"]) for r in table], [(t["name"], t["verdict"]) for t in doc["tensors"]])
        curve = c.loss_table(frame=False)
        self.assertEqual([(r["step"], r["a"], r["b"]) for r in curve],
                         [(pa.step, pa.loss, pb.loss) for pa, pb in zip(a.losses, b.losses)])

    def test_a_dump_against_its_copy_agrees_exactly(self):
        c = results.read_compare(path("agree.json"))
        self.assertEqual((c.agree, c.verdict, c.first_divergence), (True, "agree", None))
        self.assertEqual(c.counts.passed, c.counts.records)
        self.assertTrue(all(t.exact for t in c.tensors))

    def test_rank_dumps_give_one_result_per_rank(self):
        c = results.read_compare(path("ranks.json"))
        self.assertEqual(c.input, "rank_dumps")
        self.assertEqual([(r.rank, r.agree) for r in c.ranks], [(0, True), (1, False)])
        self.assertEqual(c.differing_ranks, [1])
        self.assertEqual(c.ranks[1].result.first_divergence.name,
                         results.read_compare(path("differ.json")).first_divergence.name)
        rows = c.tensors_table(frame=False)
        self.assertEqual({r["rank"] for r in rows}, {0, 1})
        self.assertEqual(len(rows), sum(len(r.result.tensors) for r in c.ranks))

    def test_a_parsed_document_is_read_and_other_kinds_or_newer_schemas_refused(self):
        out = crosstrain("compare", "a", "b", "--json", "-", ok=(1,)).stdout
        self.assertEqual(results.read_compare(json.loads(out)).counts, results.read_compare(path("differ.json")).counts)
        with self.assertRaisesRegex(ValueError, "not 'compare'"):
            results.read_compare(path("prof.json"))
        newer = copy.deepcopy(load(path("differ.json")))
        newer["schema_version"] = 2
        with self.assertRaisesRegex(ValueError, "schema_version 2"):
            results.read_compare(newer)


class AnalyzeReaderTest(unittest.TestCase):
    def test_traces_operators_steps_and_findings_are_the_document(self):
        doc = load(path("prof.json"))
        a = results.read_analyze(path("prof.json"))
        self.assertEqual(len(a.traces), len(doc["traces"]))
        self.assertEqual(len(a.traces), 2)  # two cycles of one rank
        for t, j in zip(a.traces, doc["traces"]):
            self.assertEqual((t.path, t.format, t.rank), (j["path"], j["format"], j["rank"]))
            self.assertEqual([(o.name, o.calls, o.host_self_us) for o in t.operators],
                             [(o["name"], o["calls"], o["host_self_us"]) for o in j["operators"]])
            self.assertEqual([(s.label, s.duration_us) for s in t.steps],
                             [(s["label"], s["duration_us"]) for s in j["steps"]])
            self.assertEqual([s.phases_us for s in t.steps], [s["phases_us"] for s in j["steps"]])
            self.assertEqual([f.rule for f in t.findings], [f["rule"] for f in j["findings"]])
            self.assertEqual(len(t.steps), 3)  # --profile-active's default
        addmm = next(o for o in a.traces[0].operators if o.name == "aten::addmm")
        self.assertTrue(addmm.sources[0].where.startswith("train.py:"), addmm.sources)

    def test_tables_hold_every_trace(self):
        a = results.read_analyze(path("prof.json"))
        ops = a.operators_table(frame=False)
        self.assertEqual(len(ops), sum(len(t.operators) for t in a.traces))
        self.assertEqual({r["path"] for r in ops}, {t.path for t in a.traces})
        steps = a.steps_table(frame=False)
        self.assertEqual([r["label"] for r in steps], [s.label for t in a.traces for s in t.steps])
        self.assertEqual(steps[0]["phase:forward"], a.traces[0].steps[0].phases_us["forward"])
        findings = a.findings_table(frame=False)
        self.assertEqual([r["rule"] for r in findings],
                         [f.rule for t in a.traces for f in t.findings] + [f.rule for f in a.rank_findings])
        if results.have_pandas():
            self.assertEqual(list(a.operators_table()["name"]), [r["name"] for r in ops])

    def test_a_diff_is_its_rows(self):
        doc = load(path("diff.json"))
        a = results.read_analyze(path("diff.json"))
        self.assertEqual(a.traces, [])
        self.assertEqual((a.diff.a, a.diff.b), (doc["a"], doc["b"]))
        self.assertEqual([(r.name, r.status, r.delta_us) for r in a.diff.rows],
                         [(r["name"], r["status"], r["delta_us"]) for r in doc["rows"]])
        self.assertEqual(len(a.diff_table(frame=False)), len(doc["rows"]))
        with self.assertRaises(ValueError):
            results.read_analyze(path("prof.json")).diff_table()


if __name__ == "__main__":
    unittest.main()

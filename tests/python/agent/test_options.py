"""The options' table (python/crosstrain/options.json) as the agent reads it: defaults, checks,
start()'s keywords and docs/RUN.md's table. The front's side of the same checks is tried against
these in tests/cli/run_options_test.cpp."""
import os
import sys
import json
import unittest

from agent_test_support import REPO, run_under_agent, scratch

sys.path.insert(0, os.path.join(REPO, "python"))

from crosstrain import AgentConfig, ConfigError  # noqa: E402
from crosstrain import _options, _profile  # noqa: E402


class OptionsTable(unittest.TestCase):
    def test_a_fresh_configuration_holds_every_default_of_the_table(self):
        cfg = AgentConfig()
        for option in _options.OPTIONS:
            self.assertEqual(getattr(cfg, option.name), option.default, option.name)
        self.assertEqual(AgentConfig.from_mapping({}), cfg)

    def test_the_table_names_each_option_once_in_the_form_of_a_keyword(self):
        names = [o.name for o in _options.OPTIONS]
        self.assertEqual(len(names), len(set(names)))
        for name in names:
            self.assertTrue(name.isidentifier() and name == name.lower(), name)

    def test_the_ascend_choices_are_those_the_profiler_maps(self):
        self.assertEqual(set(_options.BY_NAME["profiler_level"].choices), set(_profile._LEVELS))
        self.assertEqual(set(_options.BY_NAME["aic_metrics"].choices), set(_profile._AIC))

    def test_run_md_holds_the_table_made_from_the_file(self):
        with open(os.path.join(REPO, "docs", "RUN.md")) as f:
            text = f.read()
        begin = "<!-- run options: made from python/crosstrain/options.json -->\n"
        end = "<!-- end of run options -->"
        self.assertIn(begin, text)
        block = text[text.index(begin) + len(begin):text.index(end)]
        self.assertEqual(block, _options.markdown_table())
        for option in _options.OPTIONS:
            self.assertEqual(f"`{option.name}`" in block, not option.hidden, option.name)


class OptionChecks(unittest.TestCase):
    def refused(self, **values):
        with self.assertRaises(ConfigError) as e:
            AgentConfig.from_mapping(values)
        return str(e.exception)

    def test_each_type_refuses_a_value_of_another_type(self):
        self.assertIn("profile_wait", self.refused(profile="p", profile_wait="2"))
        self.assertIn("profile_wait", self.refused(profile="p", profile_wait=2.0))
        self.assertIn("deterministic", self.refused(deterministic=1))
        self.assertIn("seed", self.refused(seed=True))
        self.assertIn("dump_level", self.refused(dump="d", dump_level=None))
        self.assertIn("meta", self.refused(dump="d", meta={"precision": [16]}))
        self.assertIn("meta", self.refused(dump="d", meta={"loss": float("nan")}))
        self.assertEqual(AgentConfig.from_mapping({"dump": "d", "meta": {"threads": 2}}).meta, {"threads": 2})
        self.assertIn("meta", self.refused(dump="d", meta={"": "x"}))

    def test_a_byte_count_takes_the_units_of_the_flag(self):
        cfg = AgentConfig.from_mapping({"dump": "d", "dump_max_bytes": "512MiB"})
        self.assertEqual(cfg.dump_max_bytes, 512 * 1024 ** 2)
        self.assertEqual(AgentConfig.from_mapping({"dump": "d", "dump_max_bytes": "3k"}).dump_max_bytes, 3072)
        for bad in ("0", "2X", "-1", "1.5G", "2048P"):
            self.assertIn("dump_max_bytes", self.refused(dump="d", dump_max_bytes=bad))

    def test_an_option_set_without_the_one_it_needs_is_refused(self):
        self.assertIn("dump_level needs dump", self.refused(dump_level="op"))
        self.assertIn("profile_active needs profile", self.refused(profile_active=2))
        # At its default it needs nothing, given or not.
        AgentConfig.from_mapping({"dump_level": "module", "profile_stack": True})

    def test_values_from_crosstrain_run_are_refused_by_their_flags(self):
        # run hands its flags' values through the environment: the user typed --dump-steps.
        def refused_from_run(values):
            with self.assertRaises(ConfigError) as e:
                AgentConfig.from_environment({"CROSSTRAIN_AGENT_CONFIG": json.dumps(values)})
            return str(e.exception)
        self.assertTrue(refused_from_run({"dump": "d", "dump_steps": "3-1"}).startswith("--dump-steps: "))
        self.assertIn("--dump-filter '(x' is not a regular expression",
                      refused_from_run({"dump": "d", "dump_filter": "(x"}))
        self.assertEqual(refused_from_run({"dump_level": "op"}), "--dump-level needs --dump")
        # start()'s keywords stay keywords.
        self.assertTrue(self.refused(dump="d", dump_steps="3-1").startswith("dump_steps: "))

    def test_the_step_lists_are_the_fronts_syntax(self):
        keep = _options.list_ranges
        self.assertEqual(keep("0-4,10"), [(0, 4), (10, 10)])
        self.assertEqual(keep(""), [])
        for bad in ("1,", ",1", "1 ,2", "3-1", "-1", "1-", "1234567890123456", "a"):
            with self.assertRaises(_options.OptionError, msg=bad):
                keep(bad)

    def test_start_refuses_an_unknown_keyword_and_lists_the_known_ones(self):
        message = self.refused(dump_levle="op")
        self.assertIn("dump_levle", message)
        self.assertIn("dump_level", message)


class OptionsThroughTheEnvironment(unittest.TestCase):
    def test_a_bad_value_in_the_hand_off_is_one_line_and_exit_two_before_the_script(self):
        d = scratch()
        # The hand-off is crosstrain run's: a refusal names the flag the user typed.
        for config, name in (({"dump": "d", "dump_filter": "[a-"}, "--dump-filter"),
                             ({"step_marker": "nocolon"}, "--step-marker"),
                             ({"profile_active": 2}, "--profile-active")):
            r = run_under_agent("print('ran')\n", config, d)
            self.assertEqual(r.returncode, 2, config)
            self.assertEqual(r.stdout, "")
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("crosstrain: error: " + name), r.stderr)


if __name__ == "__main__":
    unittest.main()

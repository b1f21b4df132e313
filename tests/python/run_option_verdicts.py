"""The agent's verdict on option values, for tests/cli/run_options_test.cpp.

Reads a JSON list of cases from stdin, each {"start": {keyword: value, ...}, "handoff": JSON text of
CROSSTRAIN_AGENT_CONFIG or null}, and writes one JSON list: per case {"start": verdict, "handoff":
verdict or null}, a verdict being {"error": message} or {"values": the configuration's options}.
Only the agent's package is imported (from this checkout), never torch.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from crosstrain._config import ENV_CONFIG, AgentConfig, ConfigError  # noqa: E402
from crosstrain._options import OPTIONS  # noqa: E402


def verdict(make):
    try:
        cfg = make()
    except ConfigError as e:
        return {"error": str(e)}
    return {"values": {o.name: getattr(cfg, o.name) for o in OPTIONS}}


def main():
    out = []
    for case in json.load(sys.stdin):
        handoff = case.get("handoff")
        out.append({"start": verdict(lambda: AgentConfig.from_mapping(case["start"])),
                    "handoff": None if handoff is None
                    else verdict(lambda: AgentConfig.from_environment({ENV_CONFIG: handoff}))})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

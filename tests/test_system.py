"""System and Workflow YAML files: every packaged one validates; bad ones name file, line, field."""

from importlib import resources

import pytest

from xferlab.errors import BadFile
from xferlab.system.models import System, Workflow
from xferlab.system.yamlfile import load

PACKAGED = resources.files("xferlab.scenarios")


@pytest.mark.parametrize("name", sorted(p.name for p in PACKAGED.joinpath("systems").iterdir() if p.name.endswith(".yaml")))
def test_packaged_systems_validate(name):
    with resources.as_file(PACKAGED.joinpath("systems", name)) as path:
        system = load(path, System, "system")
    assert system.link(system.host, system.devices[1].name) is not None


def test_packaged_workflow_validates():
    with resources.as_file(PACKAGED.joinpath("workflows", "deceval.yaml")) as path:
        workflow = load(path, Workflow, "workflow")
    assert workflow.edges[0].bytes == 1_600_000_000 and workflow.tasks[0].seconds == pytest.approx(7.70)


WORKFLOW = """kind: workflow
name: w
tasks:
  - {name: a, device: fpga, seconds: 1}
  - {name: b, device: gpu, seconds: 2}
edges:
  - {from: a, to: b, bytes: 1GB}
"""


@pytest.mark.parametrize("change, line, fragment", [
    (("  - {from: a, to: b, bytes: 1GB}", "  - {from: a, to: c, bytes: 1GB}"), 7, "edges[0].to: 'c' is not a task"),
    (("  - {from: a, to: b, bytes: 1GB}", "  - {from: a, to: b, bytes: 1GB}\n  - {from: b, to: a, bytes: 1KB}"), 7,
     "cycle: a -> b -> a"),
    (("seconds: 2}", "seconds: -2}"), 5, "tasks[1].seconds"),
    (("bytes: 1GB}", "bytes: 1GB, colour: red}"), 7, "edges[0].colour: unknown field"),
    (("name: w\n", "name: w\nchunk: 2GB\n"), 3, "chunk: 2000000000 bytes is larger"),
    (("bytes: 1GB}", "bytes: -5}"), 7, "'-5'"),
])
def test_bad_workflows_name_file_line_field(tmp_path, change, line, fragment):
    path = tmp_path / "w.yaml"
    path.write_text(WORKFLOW.replace(*change))
    with pytest.raises(BadFile) as info:
        load(path, Workflow, "workflow")
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: ") and fragment in message, message


SYSTEM = """kind: system
name: s
host: host
devices:
  - {name: host}
  - {name: gpu}
links:
  - {between: [host, gpu], link: pcie3x16}
"""


@pytest.mark.parametrize("change, line, fragment", [
    (("[host, gpu]", "[host, tpu]"), 8, "links[0].between: 'tpu' is not a device"),
    (("link: pcie3x16", "link: pcie9x3"), 8, "gen=9"),
    (("host: host", "host: cpu"), 3, "host: 'cpu' is not a device"),
])
def test_bad_systems(tmp_path, change, line, fragment):
    path = tmp_path / "s.yaml"
    path.write_text(SYSTEM.replace(*change))
    with pytest.raises(BadFile) as info:
        load(path, System, "system")
    assert str(info.value).startswith(f"{path}:{line}: ") and fragment in str(info.value), str(info.value)


def test_a_key_given_twice_is_refused(tmp_path):
    """Bad input: a key twice in one mapping (PyYAML kept the last silently), in a workflow and in a
    task's mapping; the line of the second one is named."""
    path = tmp_path / "w.yaml"
    for text, line in ((WORKFLOW + "name: v\n", 8), (WORKFLOW.replace("seconds: 2}", "seconds: 2, seconds: 3}"), 5)):
        path.write_text(text)
        with pytest.raises(BadFile, match=f"line {line}: key '(name|seconds)' comes twice in one mapping"):
            load(path, Workflow, "workflow")

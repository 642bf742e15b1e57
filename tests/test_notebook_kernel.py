"""A batch-run notebook's kernel listens on Unix sockets in a private folder (analysis.kernel), so notebooks
started side by side cannot be handed the same TCP port; the folder is gone afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from pgfslab.analysis import execute
from pgfslab.analysis.registry import Job

pytestmark = pytest.mark.slow  # starts a kernel


class ScratchJob(Job):
    """A registry job whose notebook is a scratch file instead of one in notebooks/."""

    path: Path

    @property
    def source(self) -> Path:
        return self.path


def test_the_kernel_talks_over_private_unix_sockets_removed_afterwards(tmp_path: Path) -> None:
    report = tmp_path / "connection.json"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("report = ''", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "import json\nfrom ipykernel.connect import get_connection_info\n"
            "info = get_connection_info(unpack=True)\n"
            "open(report, 'w').write(json.dumps({'transport': info['transport'], 'ip': info['ip']}))"
        ),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    source = tmp_path / "scratch.ipynb"
    nbformat.write(nb, source)
    job = ScratchJob(name="scratch", notebook="scratch")
    object.__setattr__(job, "path", source)

    execute.run(job, {"report": str(report)}, tmp_path / "out.ipynb", kernel_cwd=tmp_path)

    seen = json.loads(report.read_text())
    assert seen["transport"] == "ipc"
    socket_dir = Path(seen["ip"]).parent
    assert socket_dir.name.startswith("pgfs-kernel-")
    assert not socket_dir.exists()

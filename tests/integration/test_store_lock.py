"""The study folder's lock: the kernel's, so a killed study leaves none; its file only names the last holder."""

import fcntl
import os
import platform
import signal
import subprocess
import sys

import pytest

from sb3_ablation.study.store.lock import LOCK_NAME, StudyLockedError, study_lock


def test_a_second_study_is_refused_and_a_killed_one_leaves_a_file_but_no_lock(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from sb3_ablation.study.store.lock import study_lock\nwith study_lock({str(tmp_path)!r}):\n"
         "    print('locked', flush=True)\n    import time; time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(StudyLockedError, match=f"pid {holder.pid} .*is writing into"), study_lock(tmp_path):
        pass
    holder.send_signal(signal.SIGKILL)  # no clean-up runs
    holder.wait()
    assert (tmp_path / LOCK_NAME).read_text() == f"pid {holder.pid} on {platform.node()}"  # left behind
    with study_lock(tmp_path):  # taken over at once
        assert (tmp_path / LOCK_NAME).read_text() == f"pid {os.getpid()} on {platform.node()}"


def _held_with_text(folder, text):
    """The folder locked by another open file of this process, with ``text`` in the lock file."""
    file = open(folder / LOCK_NAME, "w")  # noqa: SIM115 (closed by the test)
    file.write(text)
    file.flush()
    fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    return file


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pid 4242 on elsewhere-node", r"another study \(pid 4242 on elsewhere-node, another machine\) is writing into"),
        ("", r"^another study is writing into"),
    ],
)
def test_the_message_says_what_this_machine_can_tell_of_the_holder(tmp_path, text, expected):
    file = _held_with_text(tmp_path, text)
    with pytest.raises(StudyLockedError, match=expected), study_lock(tmp_path):
        pass
    file.close()


def test_a_holder_that_has_not_yet_named_itself_is_not_blamed_on_the_last_one(tmp_path):
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    file = _held_with_text(tmp_path, f"pid {finished.pid} on {platform.node()}")
    message = f"the lock file still names pid {finished.pid}, which has ended"
    with pytest.raises(StudyLockedError, match=message), study_lock(tmp_path):
        pass
    file.close()

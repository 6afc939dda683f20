"""The workshop kit around the agenda: one kernel name everywhere (the one `make lab` shows), the
Carpentries' items (code of conduct and housekeeping in the opening, sticky notes and minute cards
at every break, a shared notes template, how many helpers, a failed-laptop protocol), and the run
sheet and feedback form each printing on one page."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from courseware import workshop
from courseware.nbtools import KERNELSPEC

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "docs" / "workshop"
BLOCKS = workshop.agenda()


def _kit_texts() -> dict[str, str]:
    texts = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(KIT.glob("*.md"))}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Workshops and the handout", 1)[-1].split("\n## ", 1)[0]
    texts["README.md (workshop section)"] = section
    return texts


# -- the kernel ------------------------------------------------------------------------------------
def test_every_notebook_stores_the_one_kernel_name():
    assert workshop.KERNEL == KERNELSPEC["display_name"] == "Python 3 (ipykernel)"
    notebooks = [*ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"), *ROOT.glob("labs/[0-9][0-9]_*.ipynb"),
                 *ROOT.glob("labs/solutions/[0-9][0-9]_*.ipynb"), *workshop.HIGHLIGHTS.glob("*.ipynb")]
    for path in notebooks:
        spec = json.loads(path.read_text(encoding="utf-8"))["metadata"]["kernelspec"]
        assert (spec["name"], spec["display_name"]) == ("python3", workshop.KERNEL), path.name


_KERNEL_MENTION = re.compile(
    r"Change Kernel\s*→\s*\*?([^*|,;)]+)|--name\s+(\S+)|kernel (?:named|called) \*?([^*,;)]+)", re.I)
_OTHER_NAME = re.compile(r"kernel[^.|\n]{0,30}toolnode-lab|toolnode-lab[^.|\n]{0,10} kernel", re.I)


def test_the_kit_names_no_other_kernel():
    for name, text in _kit_texts().items():
        for match in _KERNEL_MENTION.finditer(text):
            said = next(g for g in match.groups() if g).strip(" `")
            assert said == workshop.KERNEL, (
                f"{name} names a kernel {said!r}; `make lab` shows {workshop.KERNEL!r}")
        assert not _OTHER_NAME.search(text), name
    assert workshop.KERNEL in (KIT / "helpers.md").read_text(encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_shows_that_kernel(tmp_path):
    # the exact command `make lab` runs (after its setup step), with a port and token of our own and
    # an empty home, asked over its REST API which kernels it offers
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lab = re.compile(r"^lab:.*\n\t(\$\(VENV\)/bin/jupyter lab .*?)(?<!\\)\n", re.M | re.S)
    recipe = lab.search(makefile).group(1)
    assert "--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb" in recipe
    port = _free_port()
    command = [str(ROOT / ".venv" / "bin" / "jupyter"), "lab", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.root_dir={ROOT}", "--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb",
               f"--ServerApp.port={port}", "--ServerApp.open_browser=False", "--IdentityProvider.token=t"]
    if os.getuid() == 0:
        command.append("--allow-root")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env |= {"HOME": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
            "JUPYTER_DATA_DIR": str(tmp_path / "data"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = tmp_path / "jupyter.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        specs, deadline = None, time.monotonic() + 90
        while specs is None and time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{port}/api/kernelspecs?token=t"
                with urllib.request.urlopen(url, timeout=5) as answer:
                    specs = json.load(answer)
            except OSError:
                assert server.poll() is None, log.read_text(errors="replace")[-2000:]
                time.sleep(0.5)
        assert specs is not None, "JupyterLab did not answer within 90 s"
        shown = {name: spec["spec"]["display_name"] for name, spec in specs["kernelspecs"].items()}
        assert shown == {"python3": workshop.KERNEL}, shown
        assert specs["default"] == "python3"
    finally:
        server.terminate()
        server.wait(timeout=30)


# -- the Carpentries' items --------------------------------------------------------------------------
def test_the_opening_has_the_code_of_conduct_and_housekeeping():
    conduct = (KIT / "code-of-conduct.md").read_text(encoding="utf-8")
    assert "who to tell" in conduct or "tell the instructor" in conduct
    assert "docs.carpentries.org/policies/coc" in conduct
    script = (KIT / "facilitator.md").read_text(encoding="utf-8")
    welcome = script.split("## 0:00–", 1)[1].split("\n## ", 1)[0]
    for said in ("code of conduct", "code-of-conduct.md", "housekeeping", "sticky notes",
                 workshop.NOTES_LINK):
        assert said in welcome, said


def test_every_break_has_sticky_notes_and_minute_cards():
    script = (KIT / "facilitator.md").read_text(encoding="utf-8")
    sheet = (KIT / "run-sheet.md").read_text(encoding="utf-8")
    breaks = [b for b in BLOCKS if b.kind == "break"]
    for block in breaks:
        chunk = script.split(f"## {workshop.clock(block.start)}–", 1)[1].split("\n## ", 1)[0]
        assert "sticky notes" in chunk and "minute card" in chunk and "online" in chunk
        start = f"| {workshop.clock(block.start)} |"
        row = next(line for line in sheet.splitlines() if line.startswith(start))
        assert "sticky notes, minute cards" in row
    notes = (KIT / "notes-template.md").read_text(encoding="utf-8")
    assert notes.count("## Minute card") == len(breaks)


def test_the_shared_notes_template_has_the_link_placeholder_and_the_day():
    notes = (KIT / "notes-template.md").read_text(encoding="utf-8")
    assert workshop.NOTES_LINK in notes and workshop.REPOSITORY_LINK in notes
    for block in BLOCKS:
        assert f"| {workshop.clock(block.start)} | {block.title} | {block.minutes} |" in notes
    guide = (KIT / "README.md").read_text(encoding="utf-8")
    assert "notes-template.md" in guide.split("**Checklist**", 1)[1].split("## ", 1)[0]


def test_the_notes_templates_homework_links_open_the_files():
    # on GitHub `<address>/labs/...` is a 404: a file opens under `<address>/blob/HEAD/...`
    notes = (KIT / "notes-template.md").read_text(encoding="utf-8")
    homework = notes.split("## Homework, in this order", 1)[1].split("\n## ", 1)[0]
    links = re.findall(r"\]\(([^)]*)\)", homework)
    assert len(links) == len(workshop.HOMEWORK)
    for link, path in zip(links, workshop.HOMEWORK, strict=True):
        assert link == f"{workshop.REPOSITORY_LINK}{workshop.FILES_PATH}/{path}"
    assert workshop.FILES_PATH == "/blob/HEAD" and workshop.GITLAB_FILES_PATH == "/-/blob/HEAD"
    preamble = " ".join(notes.split("---", 1)[0].split())
    assert f"`{workshop.FILES_PATH}/`" in preamble and f"`{workshop.GITLAB_FILES_PATH}/`" in preamble
    assert "https://github.com/ada/toolnode-lab" in preamble


def test_the_feedback_forms_free_text_questions_have_room_to_write():
    form = (KIT / "feedback.md").read_text(encoding="utf-8")
    assert workshop.FREE_TEXT_LINES >= 4
    for question in workshop.FREE_TEXT:
        assert f"| {question} |\n|:---|\n| {'<br>' * workshop.FREE_TEXT_LINES} |" in form, question
    assert "____" not in form, "a line of underscores is no room to write"


def test_how_many_helpers():
    assert workshop.LEARNERS_PER_HELPER in range(8, 11)  # the Carpentries: one per 8-10 learners
    assert [workshop.helpers_needed(n) for n in (1, 8, 9, 25, 40)] == [1, 1, 2, 4, 5]
    said = f"**{workshop.helpers_needed()} helpers for {workshop.LEARNERS} learners**"
    assert said in (KIT / "helpers.md").read_text(encoding="utf-8")
    assert said in (KIT / "README.md").read_text(encoding="utf-8")


def test_the_failed_laptop_protocol():
    minutes = [m for m, _, _ in workshop.FAILED_LAPTOP]
    timed = [m for m in minutes if m]
    assert timed == sorted(timed) and minutes[-1] == 0, "steps in order, the last at the next break"
    helpers = (KIT / "helpers.md").read_text(encoding="utf-8")
    assert "## When a laptop fails" in helpers
    for _, _, text in workshop.FAILED_LAPTOP:
        assert text in helpers
    # the room never waits for one laptop: by the last timed step its owner is on the pair's laptop
    assert "pair's laptop" in workshop.FAILED_LAPTOP[-2][2]


# -- one story across the kit -----------------------------------------------------------------------
def _all_kit_texts() -> dict[str, str]:
    texts = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(KIT.glob("*.md"))}
    texts["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    return texts


def test_every_offline_pip_line_is_the_same_command():
    found = {}
    for name, text in _all_kit_texts().items():
        for line in re.findall(r"`([^`\n]*pip install[^`\n]*--no-index[^`\n]*)`", text):
            if "--dry-run" in line:
                continue  # the bundle's own proof, not an install
            shape = re.sub(r"--find-links \S+", "--find-links <wheelhouse>", line)
            shape = re.sub(r"^\.venv[/\\](bin|Scripts)[/\\]python", "<venv python>", shape)
            found.setdefault(shape, []).append(name)
    assert len(found) == 1, f"the offline pip line differs between docs: {found}"
    only = next(iter(found))
    assert only == ("<venv python> -m pip install --no-deps --no-index --find-links <wheelhouse> "
                    "-r requirements.txt -e ."), only
    assert {"README.md", "docs/workshop/README.md", "docs/workshop/preflight.md",
            "docs/workshop/usb.md"} <= set(next(iter(found.values())))


def test_the_readme_names_the_highlights_blocks_the_agenda_has():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = readme[readme.index("*Workshop instructor*"):].split("\n- ", 1)[0].split("\n\n", 1)[0]
    parts = sorted(b.part.notebook[10:12] for b in BLOCKS if b.highlights)
    said = " and ".join(parts) + " highlights"
    assert said in " ".join(line.split()), (said, line)
    assert "a week before" in line and "the day before" not in line, "make setup: a week before"


def test_shared_laptops_are_reset_with_reset_laptop_everywhere():
    for name, text in _all_kit_texts().items():
        flat = " ".join(text.split())
        for match in re.finditer(r"[Bb]etween (two )?groups", flat):
            near = flat[max(0, match.start() - 120):match.start() + 200]
            assert "reset-laptop" in near or "not enough" in near, (name, near)


def test_the_checklist_names_slides_and_the_code_of_conduct_contact():
    guide = (KIT / "README.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in
            guide.split("**Checklist**", 1)[1].split("\n\n", 2)[1].splitlines()[2:]}
    conduct = (KIT / "code-of-conduct.md").read_text(encoding="utf-8")
    placeholder = re.search(r"<name and contact[^>]*>", " ".join(conduct.split())).group(0)
    assert placeholder in rows["a week before"] and "code-of-conduct.md" in rows["a week before"]
    assert "`make setup`" in rows["a week before"]
    day_before = rows["the day before"]
    for said in ("`make slides`", "npm", "Node.js", "network", "cheat sheets"):
        assert said in day_before, said


def test_the_solutions_story_is_one():
    texts = _all_kit_texts()
    for name, text in texts.items():
        flat = " ".join(text.split())
        assert "clone it or `git pull`" not in flat and "(or `git pull`)" not in flat, name
        assert "Solutions are not on the learners' copies" not in flat, name
    usb = " ".join(texts["docs/workshop/usb.md"].split())
    solutions = " ".join(texts["docs/workshop/solutions.md"].split())
    assert "if there are minutes for it" in usb and "only if there are minutes for it" in solutions
    assert "At the wrap-up, copy the solutions" not in solutions
    assert "hints first" in solutions
    assert "q1.solution()` works on most laptops" in texts["docs/workshop/helpers.md"]
    assert "hints before solutions" in texts["docs/workshop/facilitator.md"]


def test_the_typed_block_opens_the_live_copy():
    script = (KIT / "facilitator.md").read_text(encoding="utf-8")
    for block in BLOCKS:
        if block.part is not None and any(s.mode == "type" for s in block.steps):
            live = f"build/slides/live/{Path(block.part.notebook).name}"
            assert f"Open the live-coding copy, `{live}` (`make live-copy`" in script
            assert "collapse the cell" not in script


# -- printing -------------------------------------------------------------------------------------
PRINT_CSS = {
    "landscape": "@page { size: %s landscape; margin: 10mm; } body { font: 9pt sans-serif; }",
    "portrait": "@page { size: %s; margin: 15mm; } body { font: 10pt sans-serif; }",
}
TABLE_CSS = ("table { border-collapse: collapse; width: 100%; } td, th { border: 0.5pt solid #999; "
             "padding: 1.5pt 3pt; vertical-align: top; } h1 { font-size: 13pt; margin: 0 0 4pt; } "
             "p { margin: 4pt 0; }")


def print_pages(markdown: str, paper: str, orientation: str, out: Path) -> int:
    """Pages of the Markdown printed by headless Chromium with a plain print style."""
    import mistune

    html = out / "page.html"
    css = PRINT_CSS[orientation] % paper + TABLE_CSS
    html.write_text(f"<!doctype html><meta charset=utf-8><style>{css}</style>{mistune.html(markdown)}",
                    encoding="utf-8")
    pdf = out / "page.pdf"
    subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={out / 'profile'}", "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
                    html.as_uri()], check=True, capture_output=True, timeout=120)
    info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


@pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("pdfinfo")),
                    reason="needs Chromium and poppler (make handout-deps)")
@pytest.mark.parametrize(("name", "orientation"),
                         [("run-sheet.md", "landscape"), ("feedback.md", "portrait")])
@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_it_prints_on_one_page(tmp_path, name, orientation, paper):
    assert print_pages((KIT / name).read_text(encoding="utf-8"), paper, orientation, tmp_path) == 1


# -- the timeline, the counts, the names -------------------------------------------------------------
def test_the_pre_flight_timeline_is_one_story():
    # the note goes out two weeks before, the outputs are due a week before, the tally is two days before
    guide = (KIT / "README.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in
            guide.split("**Checklist**", 1)[1].split("\n\n", 2)[1].splitlines()[2:]}
    assert list(rows)[:4] == ["two weeks before", "a week before", "two days before", "the day before"]
    first = rows["two weeks before"]
    assert "send [the pre-flight note]" in first and "by a week before" in first
    assert "outputs are due" in rows["a week before"] and "make doctor-tally" in rows["two days before"]
    preflight = (KIT / "preflight.md").read_text(encoding="utf-8").split("## Reading the output")[0]
    preflight = " ".join(preflight.split())
    for said in ("**two weeks before**", "by **a week before**", "**Two days before**, you tally"):
        assert said in preflight, said
    usb = " ".join((KIT / "usb.md").read_text(encoding="utf-8").split())
    assert "## Two days before" in usb
    assert "sent two weeks before, asks everyone for theirs by a week before" in usb
    for name, text in _all_kit_texts().items():
        flat = " ".join(text.split())
        for match in re.finditer(r"[^.|]*\bnote\b[^.|]*\ba week before\b", flat):
            said = match.group(0)
            assert "by a week before" in said or "make setup" in said, (name, said)


_NUMBER_WORDS = {"twenty": 20, "twenty-five": 25, "thirty": 30, "forty": 40, "fifty": 50}


def test_every_count_of_the_room_is_the_plans():
    words = "|".join(_NUMBER_WORDS)
    pattern = re.compile(r"(?<![–\-\d])\b(\d+|" + words + r") (laptops|learners|people)\b", re.I)
    texts = _all_kit_texts()
    texts["courseware/workshop.py"] = (ROOT / "courseware" / "workshop.py").read_text(encoding="utf-8")
    for name, text in texts.items():
        flat = " ".join(text.split())
        for match in pattern.finditer(flat):
            if flat[max(0, match.start() - 4):match.start()].endswith("per "):
                continue  # a ratio: one helper per 8 learners
            said = match.group(1).lower()
            count = int(said) if said.isdigit() else _NUMBER_WORDS[said]
            assert count == workshop.LEARNERS, f"{name}: {match.group(0)!r}; the plan: {workshop.LEARNERS}"


def test_the_guide_says_what_the_plan_gives_the_wrap_up():
    guide = " ".join((KIT / "README.md").read_text(encoding="utf-8").split())
    low, high = workshop.WRAP_UP
    wrap = BLOCKS[-1]
    assert wrap.kind == "wrap-up"
    said = f"the wrap-up takes what is left: {wrap.minutes} minutes in this plan (it may take {low} to {high}"
    assert said in guide


def test_the_cheat_sheets_are_named_and_counted_as_the_handout_prints_them():
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import build_handout

    named = f"cheatsheet-<{'|'.join(build_handout.CHEATSHEETS)}>-<a4|letter>.pdf"
    texts = _all_kit_texts()
    said = 0
    for name, text in texts.items():
        flat = " ".join(text.replace("\\|", "|").split())
        for match in re.finditer(r"cheatsheet-[^\s`]*\.pdf|cheatsheet-\*\.pdf", flat):
            assert match.group(0).endswith(named), f"{name}: {match.group(0)} (the files are {named})"
            near = flat[match.end():match.end() + 80]
            assert "one or two pages each (A4 and Letter), at 7 pt or more" in near, (name, near)
            said += 1
        assert not re.search(r"cheat ?sheets?[^.]{0,60}\b(on one page|two pages each|three)\b", flat), name
    assert said >= 4  # the checklist, the guide twice, the README


def test_shared_laptops_stop_jupyterlab_first_and_a_full_clone_needs_yes():
    guide = (KIT / "README.md").read_text(encoding="utf-8")
    checklist = " ".join(guide.split("**Checklist**", 1)[1].split("\n\n", 2)[1].split())
    usb = " ".join((KIT / "usb.md").read_text(encoding="utf-8").split())
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for name, text in (("checklist", checklist), ("usb.md", usb), ("README.md", readme)):
        assert "make reset-laptop YES=1" in text and "File → Shut Down" in text, name
    for text in (checklist, usb):
        assert "Ctrl-C does not stop a `make lab` left running in the background" in text
    # the Makefile asks for YES=1 where labs/solutions/ exists: what the docs explain
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nreset-laptop:", 1)[1].split("\n\n", 1)[0]
    assert "labs/solutions" in recipe and 'YES)" = 1' in recipe


def test_the_windows_lines_run_what_the_make_targets_run():
    guide = (KIT / "README.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    table = guide.split("| make | without make (Windows) |", 1)[1].split("\n\n", 1)[0]
    row = re.compile(r"^\| `make ([\w-]+)[^`]*` \| `\.venv\\Scripts\\python (-m [^`]+)` \|", re.M)
    found = row.findall(table)
    assert [target for target, _ in found] == ["reset-lab", "reset-labs", "reset-lessons", "highlights"]
    for target, line in found:
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        module = line.rsplit(" ", 1)[0] if target == "reset-lab" else line
        assert f"$(PY) {module}" in recipe, (target, line)
    assert "`make reset-laptop` | " in table and "not tested on Windows" in table
    preflight = (KIT / "preflight.md").read_text(encoding="utf-8")
    block = preflight.split("```powershell\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0].startswith("py -3.1") and "..." not in "\n".join(block)
    lab = next(i for i, text in enumerate(block) if "jupyter lab" in text)
    assert block.index('$env:PYTHONUTF8 = "1"') < lab
    assert "3.11, 3.12 or 3.13" in " ".join(preflight.split("### Without make", 1)[1].split())


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_windows_reset_laptop_git_lines_leave_nothing_of_the_group(tmp_path):
    # usb.md's PowerShell lines for a laptop without make: the git ones, run here by bash (the quoting
    # is the same); the Remove-Item line needs Windows
    usb = (KIT / "usb.md").read_text(encoding="utf-8")
    section = usb.split("### Windows, without make", 1)[1]
    lines = section.split("```powershell\n", 1)[1].split("```", 1)[0].splitlines()
    git_lines = [line for line in lines if line.startswith("git ")]
    assert len(git_lines) == 2 and any(line.startswith("Remove-Item") for line in lines)
    assert "Not tested on Windows" in section
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull}

    def git(*args, cwd):
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    origin = tmp_path / "origin"
    (origin / "labs").mkdir(parents=True)
    (origin / "labs" / "01.ipynb").write_text("starter\n", encoding="utf-8")
    (origin / ".gitignore").write_text(".venv/\nwheelhouse/\nlabs/backups/\n*.egg-info\n", encoding="utf-8")
    git("init", "-q", "-b", "main", cwd=origin)
    git("add", "-A", cwd=origin)
    git("commit", "-q", "-m", "course", cwd=origin)
    laptop = tmp_path / "laptop"
    git("clone", "-q", str(origin), str(laptop), cwd=tmp_path)
    # the group: an edited lab, a commit, new files, ignored ones; the install stays
    (laptop / "labs" / "01.ipynb").write_text("mine\n", encoding="utf-8")
    (laptop / "notes.ipynb").write_text("x", encoding="utf-8")
    git("add", "-A", cwd=laptop)
    git("commit", "-q", "-m", "ours", cwd=laptop)
    (laptop / "labs" / "01.ipynb").write_text("mine again\n", encoding="utf-8")
    (laptop / "labs" / "backups").mkdir()
    (laptop / "labs" / "backups" / "01.old.ipynb").write_text("x", encoding="utf-8")
    (laptop / "scratch.py").write_text("x", encoding="utf-8")
    for kept in (".venv/bin/python", "wheelhouse/CONTENTS.txt", "toolnode_lab.egg-info/PKG-INFO"):
        (laptop / kept).parent.mkdir(parents=True, exist_ok=True)
        (laptop / kept).write_text("x", encoding="utf-8")
    for line in git_lines:
        done = subprocess.run(["bash", "-c", line], cwd=laptop, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (line, done.stderr)
    files = sorted(p.relative_to(laptop).as_posix() for p in laptop.rglob("*")
                   if p.is_file() and ".git" not in p.relative_to(laptop).parts)
    assert files == [".gitignore", ".venv/bin/python", "labs/01.ipynb", "toolnode_lab.egg-info/PKG-INFO",
                     "wheelhouse/CONTENTS.txt"]
    assert (laptop / "labs" / "01.ipynb").read_text(encoding="utf-8") == "starter\n"

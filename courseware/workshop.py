"""The three-hour workshop: blocks computed from the course's time estimate, times a room factor.

Every block covers named parts of one notebook (its core path, or `## N.` sections by number, or
a lab's `## Exercise N` sections); its minutes are `courseware.course.estimate_cells` of exactly those
cells (the notebook's Setup included, since it must run; one run margin per block), times the
room factor for its kind, rounded to 5 the way every stated time is. Breaks and the wrap-up are
fixed. `docs/workshop/README.md`'s agenda table is printed from here
(`python -m courseware.workshop table`) and `tests/test_workshop_guide.py` keeps the two equal.

Example:
    ```python
    from courseware.workshop import agenda, total
    [(b.start, b.title, b.minutes) for b in agenda()][:2]
    total()                      # 180
    ```

The room factor: the estimate is one learner at their own pace. A room of 25 with two helpers goes
slower: the instructor types and explains (live coding paces the room to its slower half), and
somebody's kernel or typo stops everyone now and then. The tryout recorded in the course's
workshop issue measured the old agenda at 190-216 minutes by the estimate and 215-260 in a room of
25, i.e. 1.13-1.20x; demos get 1.25x (that ratio plus typing while talking). Labs get 1.5x: pairs
read the task together, run the check, and a stuck pair waits for a helper once.

Taught in `docs/workshop/README.md` (the instructor's guide).
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from courseware.course import RUN_MARGIN_MINUTES, estimate_cells, round_to_five

ROOT = Path(__file__).resolve().parent.parent
LENGTH = 180
"""The session, in minutes, breaks included."""
WRAP_UP = (5, 15)
"""The wrap-up takes what is left of the session: at least 5 minutes (homework, cheat sheets,
feedback form), at most 15 (more than that and the plan should teach one more block)."""
ROOM_FACTOR = {"demo": 1.25, "highlights": 1.25, "lab": 1.5}
"""Room minutes per estimated minute, by kind of block (see the module's docstring)."""


@dataclass(frozen=True)
class Part:
    """One notebook stretch a block covers: `core`, `§N` (a `## N.` section) or `Exercise N`."""

    notebook: str
    selectors: tuple[str, ...] = ("core",)


@dataclass(frozen=True)
class Block:
    """One agenda row. `minutes` is computed (see `agenda`) unless the block is fixed."""

    title: str
    kind: str  # demo | highlights | lab | break | wrap-up
    part: Part | None = None
    fixed: int | None = None
    does: str = ""
    start: int = 0
    minutes: int = 0
    estimate: float = 0.0
    sections: tuple[str, ...] = field(default=())
    run_cells: tuple[int, ...] = field(default=())


PLAN: tuple[Block, ...] = (
    Block("Welcome · housekeeping, pairs", "welcome", fixed=10,
          does="names, the day's plan, Wi-Fi not needed, pairs formed, laptops open on lesson 00"),
    Block("Opening · 00 Start here", "demo", Part("notebooks/00_start_here.ipynb", ("§1", "§3")),
          does="the opening deck; the map; the pre-flight check run by everyone"),
    Block("01 · Sequential vs asyncio.gather", "demo",
          Part("notebooks/01_sequential_vs_gather.ipynb", ("§1", "§2", "§3", "§4")),
          does="predict, then run: the timelines carry the argument"),
    Block("Lab 01 · Make it concurrent, exercise 1 (pairs)", "lab",
          Part("labs/01_make_it_concurrent.ipynb", ("Exercise 1",)),
          does="one turn, six calls: gather, answer each call by its id"),
    Block("Break", "break", fixed=10),
    Block("02 · A hand-built tool node, typed live", "demo",
          Part("notebooks/02_custom_async_tool_node.ipynb", ("§1", "§2", "§3")),
          does="from the live-coding copy: anatomy of a call, the allow-list, the minimal node"),
    Block("03 · The built-in ToolNode: standalone and its errors", "demo",
          Part("notebooks/03_builtin_toolnode.ipynb", ("§1", "§2", "§4")),
          does="the 'N/A' error; what the default policy answers and what it raises, predicted first"),
    Block("Break", "break", fixed=10),
    Block("05 highlights · how return values become ToolMessage content", "highlights",
          Part("notebooks/05_return_types.ipynb", ("§5",)),
          does="only the cells listed: Setup, what §5 uses, then §5"),
    Block("06 highlights · Command.PARENT in a real parent graph", "highlights",
          Part("notebooks/06_command_and_parent.ipynb", ("§5",)),
          does="only the cells listed: Setup, what §5 uses, then §5"),
    Block("Wrap-up · homework, cheat sheets, feedback", "wrap-up",
          does="the homework order, the cheat sheets, the feedback form"),
)
"""The plan: which parts each block covers, in order. Minutes are computed from the notebooks."""

SCRIPT: dict[str, dict] = {
    "welcome": {
        "say": "Who we are, the plan on the wall, breaks at the times shown; no Wi-Fi or API key needed "
               "today. Sit in pairs: one laptop runs, the other reads the prediction aloud.",
        "show": "the agenda; where the helpers sit; how to flag being stuck (a sticky note on the lid)",
        "checkpoint": "every pair has lesson 00 open in JupyterLab",
        "cut": "introductions round the room: names only",
        "helpers": "walk the room: a laptop without JupyterLab open is the first to help",
        "questions": [
            ("Can I work alone?", "Yes, but predict out loud to yourself: the checks reward it."),
        ],
    },
    "opening": {
        "say": "Three hours, offline, on your laptop: how LangGraph runs the tools a model asks for. "
               "We predict before we run; your timings differ from mine and the checks still pass.",
        "show": "the opening deck; lesson 00 §1 (the map); then `make doctor` in a terminal, line by line",
        "checkpoint": "everyone's last doctor line reads `ready`; the not-ready names are with a helper",
        "cut": "§1's table: point at it and move on; never skip the doctor",
        "helpers": "every screen's last doctor line; a FAIL line names its fix (preflight.md)",
        "questions": [
            ("Do I need an API key?",
             "No: a scripted model answers; lesson 04 §8 shows the switch to a real one."),
            ("My doctor says `pinned versions` FAIL",
             "`make setup` (or `make offline-install` from the stick)."),
        ],
    },
    "01 · Sequential vs asyncio.gather": {
        "say": "Two awaits in a row wait for the sum; `gather` waits for the longest. Results come back in "
               "argument order, not finishing order. A call that needs another's answer stays sequential.",
        "show": "ask 'three 0.1 s calls, sequential vs gathered: how long each?' before §2's timing cell; "
                "the timelines; §3's order; §4's dependent call",
        "checkpoint": "everyone has run §2's timeline and can say why gather returns in argument order",
        "cut": "§1's second example and §3's extra run; keep §2 and §4 (lab 01 needs both)",
        "helpers": "a kernel that is not toolnode-lab (`ModuleNotFoundError: helpers`): "
                   "Kernel → Change Kernel",
        "questions": [
            ("Does gather run the calls in threads?", "No: one thread, one event loop; the waits overlap."),
            ("Why do my numbers differ from the screen?",
             "Different laptops; the asserts are ratios with margins."),
        ],
    },
    "Lab 01 · Make it concurrent, exercise 1 (pairs)": {
        "say": "Pairs: one types, one reads the check's message. `q1.check()` says what it expected, "
               "what it saw and which section to re-read; `q1.hint()` before asking.",
        "show": "the first call of exercise 1 together, then `q1.check()` failing and `q1.hint()`",
        "checkpoint": "most pairs see ✔ for q1; fast pairs have started exercise 2",
        "cut": "exercise 2 goes home; stop at the clock even if some pairs are mid-way",
        "helpers": "walk the rows; a pair staring at the same `not yet` for 3 minutes gets `q1.hint(2)`",
        "questions": [
            ("Can I see the solution?",
             "Not in the room (solutions.md); after the session it is in labs/solutions/."),
            ("My check says 'took the sum of the waits'", "The calls are awaited one by one: gather them."),
        ],
    },
    "02 · A hand-built tool node, typed live": {
        "say": "A tool node is a loop over the last message's tool calls: look each name up in an "
               "allow-list, run it, answer with a ToolMessage carrying its id — errors too.",
        "show": "type §1–§3 in the live-coding copy (build/slides/live/), the committed lesson beside it",
        "checkpoint": "the minimal node answers every call, including the unknown name",
        "cut": "type only §3 and reveal §1–§2 from the committed lesson",
        "helpers": "typos in the room's copies: compare with the committed lesson's cell",
        "questions": [
            ("Why not just call the tool?",
             "The model needs one answer per call id, or the next turn fails."),
            ("Where is the timeout?",
             "§4, homework: `asyncio.wait_for` per call, and its own TimeoutError trap."),
        ],
    },
    "03 · The built-in ToolNode: standalone and its errors": {
        "say": "ToolNode outside a graph needs its runtime; inside, errors follow `handle_tool_errors`: "
               "by default argument errors become messages and everything else raises.",
        "show": "§2's `'N/A'` error and its fix; §4: predict what the default does with a bad argument, "
                "an unknown tool and a ValueError before running each",
        "checkpoint": "the room can say what the default policy does with a ValueError",
        "cut": "§1 (03 §2 shows the same node); every other handle_tool_errors form is deep dive 7, homework",
        "helpers": "a `raises-exception` cell is meant to fail: check the error is the one the prose names",
        "questions": [
            ("Doesn't ToolNode catch errors?",
             "Not every error: since release 1.0.2 of langgraph-prebuilt the default answers argument "
             "errors and raises the rest; set `handle_tool_errors`."),
            ("Does it run the calls at once?",
             "Yes, §3 (homework): a thread pool under invoke, gather under ainvoke."),
        ],
    },
    "05 highlights · how return values become ToolMessage content": {
        "say": "Whatever a tool returns becomes a ToolMessage's content: a string passes, a dict is JSON, "
               "content blocks stay blocks.",
        "show": "run only the cells the agenda names, in order; the live table at the end",
        "checkpoint": "the table is on every screen",
        "cut": "show the table on the projector only",
        "helpers": "a NameError means a cell was skipped: run the listed cells from the top",
        "questions": [
            ("What does the model see for a dict?", "`json.dumps(..., ensure_ascii=False)` of it."),
        ],
    },
    "06 highlights · Command.PARENT in a real parent graph": {
        "say": "A tool can hand off to the parent graph with Command.PARENT; its batch's other answers "
               "never arrive, so hand off alone.",
        "show": "run only the cells the agenda names; the parent's history with the missing answers",
        "checkpoint": "the room has seen the unanswered call in the parent's messages",
        "cut": "show it on the projector only; it is lesson 06 and lab 06 at home",
        "helpers": "a NameError means a cell was skipped: run the listed cells from the top",
        "questions": [
            ("Why does OpenAI reject the next turn?", "A tool call was left without its ToolMessage."),
        ],
    },
    "Wrap-up · homework, cheat sheets, feedback": {
        "say": "The homework order, the cheat sheets, the handout; then five minutes of feedback.",
        "show": "the wrap-up deck; hand out the cheat sheets and the feedback form",
        "checkpoint": "forms collected; USB sticks back",
        "cut": "never the feedback form",
        "helpers": "collect the forms and the sticks",
        "questions": [
            ("Where are the solutions?", "`labs/solutions/` in the repository; `q1.solution()` in a lab."),
        ],
    },
}
"""The facilitator script, per block: what to say and show, the checkpoint, what to cut, where
helpers look, the common questions. docs/workshop/facilitator.md is printed from it with the
agenda's clock times (`python -m courseware.workshop write-guide`)."""


HOMEWORK: tuple[str, ...] = (
    "labs/01_make_it_concurrent.ipynb", "notebooks/02_custom_async_tool_node.ipynb",
    "labs/02_build_a_tool_node.ipynb", "notebooks/03_builtin_toolnode.ipynb",
    "notebooks/04_tools_condition_loop.ipynb", "notebooks/05_return_types.ipynb",
    "labs/05_predict_return_types.ipynb", "notebooks/06_command_and_parent.ipynb",
    "labs/06_hand_off_to_parent.ipynb", "notebooks/07_inside_toolnode.ipynb",
    "notebooks/08_interceptors.ipynb", "labs/03_error_policy.ipynb",
    "labs/08_guard_dangerous_tools.ipynb", "notebooks/09_prebuilt_agents.ipynb",
    "notebooks/10_mcp_tools.ipynb", "notebooks/12_streaming_and_stopping.ipynb",
    "notebooks/13_failure_and_recovery.ipynb", "labs/13_stop_stream_recover.ipynb",
    "notebooks/14_approval_retry_and_order.ipynb", "notebooks/15_what_a_tool_sees.ipynb",
    "notebooks/16_tool_definitions.ipynb", "notebooks/19_mock_interview.ipynb",
    "notebooks/20_drill_bank.ipynb",
)
"""After the session, in this order (lab 03 after lesson 08: its checks use interceptors)."""


# -- reading notebooks -----------------------------------------------------------------------------
def _source(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def cells_of(notebook: str | Path) -> list[dict]:
    """The cells of a notebook (a path relative to the repository root, or absolute)."""
    path = Path(notebook)
    path = path if path.is_absolute() else ROOT / path
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def sections(cells: list[dict]) -> list[tuple[str, list[int]]]:
    """`(heading, cell indices)` for each `## ` section, in order; the cells above the first come
    under the heading ''."""
    out: list[tuple[str, list[int]]] = [("", [])]
    for i, cell in enumerate(cells):
        source = _source(cell)
        if cell["cell_type"] == "markdown" and source.startswith("## "):
            out.append((source.splitlines()[0][3:].strip(), []))
        out[-1][1].append(i)
    return out


_NUMBERED = re.compile(r"^(\d+)\. ")
_OUTSIDE_CORE = re.compile(r"^(?:\d+\. )?(?:Deep dive|Sitting \d+): ")


def _matches(heading: str, selector: str) -> bool:
    if selector == "core":
        return not _OUTSIDE_CORE.match(heading)
    if selector.startswith("§"):
        number = _NUMBERED.match(heading)
        return bool(number) and number.group(1) == selector[1:]
    return heading == selector or heading.startswith(selector + ":")


def selected(part: Part) -> tuple[list[str], list[int]]:
    """The headings a part covers and its cell indices (Setup always included, then the sections).

    Raises `LookupError` naming the selector when a notebook no longer has that section."""
    cells = cells_of(part.notebook)
    found: list[str] = []
    indices: list[int] = []
    groups = sections(cells)
    setup = [ix for heading, ix in groups if heading == "Setup"]
    if "core" not in part.selectors and setup:
        indices += setup[0]
    for selector in part.selectors:
        hits = [(h, ix) for h, ix in groups if h and _matches(h, selector)]
        if not hits:
            raise LookupError(f"{part.notebook} has no section {selector!r}: "
                              f"its sections are {[h for h, _ in groups if h]}")
        for heading, ix in hits:
            if heading not in found:
                found.append(heading)
                indices += [i for i in ix if i not in indices]
    return found, sorted(indices)


# -- what a highlight needs from above -------------------------------------------------------------
def _python(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell defines at top level or anywhere it binds, names it reads)."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # cells may `await` at top level
    try:
        tree = compile(_python(source), "<cell>", "exec", flags=flags)
    except SyntaxError:  # a cell that shows a syntax error on purpose reads and defines nothing
        return set(), set()
    defined, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, ast.Store | ast.Del) else used).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                defined.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return defined, used


def cells_to_run(part: Part) -> list[int]:
    """Indices of the code cells to run, in order, for a part shown on its own: the notebook's
    Setup, every earlier cell that defines a name the part reads (and what those read), the part.

    `tests/test_workshop_guide.py` runs exactly these cells in a fresh kernel."""
    cells = cells_of(part.notebook)
    _, indices = selected(part)
    code = [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    wanted = {i for i in indices if cells[i]["cell_type"] == "code"}
    names = {i: _names(_source(cells[i])) for i in code}
    changed = True
    while changed:
        changed = False
        for i in sorted(wanted):
            defined_before: set[str] = set()
            for j in sorted(wanted):
                if j >= i:
                    break
                defined_before |= names[j][0]
            missing = names[i][1] - names[i][0] - defined_before - set(dir(builtins))
            for name in missing:
                source = next((j for j in reversed(code) if j < i and name in names[j][0]), None)
                if source is not None and source not in wanted:
                    wanted.add(source)
                    changed = True
    return sorted(wanted)


def execution_counts(notebook: str, indices: list[int]) -> list[int]:
    """The `[n]` labels JupyterLab shows beside these cells in the committed notebook."""
    cells = cells_of(notebook)
    return [cells[i].get("execution_count") or 0 for i in indices]


# -- the agenda ------------------------------------------------------------------------------------
def block_estimate(part: Part, highlights: bool = False) -> float:
    """The course's estimate, in exact minutes, of the cells a part covers, plus one run margin
    (for highlights, with the earlier cells it must run as well)."""
    cells = cells_of(part.notebook)
    _, indices = selected(part)
    if highlights:
        indices = sorted(set(indices) | set(cells_to_run(part)))
    estimate = estimate_cells([cells[i] for i in indices], margin=RUN_MARGIN_MINUTES)
    # ROOM_FACTOR was measured against the estimate without a learner's own predictions, output
    # reading and error hunting: in the room the instructor runs, reads out and explains those.
    return replace(estimate, predictions=0, output_lines=0, errors=0).exact_minutes


def agenda(plan: tuple[Block, ...] = PLAN) -> list[Block]:
    """The plan with each block's start, minutes, estimate, headings and (highlights) cells filled."""
    out, clock = [], 0
    for block in plan:
        if block.kind == "wrap-up":  # the rest of the session: questions, homework, feedback
            minutes = LENGTH - clock
            exact, heads, run = float(minutes), (), ()
        elif block.fixed is not None:
            minutes, exact, heads, run = block.fixed, float(block.fixed), (), ()
        else:
            exact = block_estimate(block.part, block.kind == "highlights")
            minutes = round_to_five(exact * ROOM_FACTOR[block.kind])
            heads = tuple(selected(block.part)[0])
            run = tuple(cells_to_run(block.part)) if block.kind == "highlights" else ()
        out.append(Block(block.title, block.kind, block.part, block.fixed, block.does, clock, minutes,
                         round(exact, 1), heads, run))
        clock += minutes
    return out


def total(plan: tuple[Block, ...] = PLAN) -> int:
    """Minutes of the whole session, breaks included."""
    return sum(b.minutes for b in agenda(plan))


def clock(minutes: int) -> str:
    """`95` → `1:35`."""
    return f"{minutes // 60}:{minutes % 60:02d}"


def _link(notebook: str) -> str:
    return f"../../{notebook}"


def markdown_table(plan: tuple[Block, ...] = PLAN) -> str:
    """The guide's agenda table (docs/workshop/README.md), one row per block."""
    lines = ["| slot | block | covers | estimate | factor | minutes |", "|---|---|---|---|---|---|"]
    for b in agenda(plan):
        if b.part is None:
            covers, est, factor = b.does, "", ""
        else:
            name = Path(b.part.notebook).stem
            heads = "; ".join(h.replace("|", "\\|") for h in b.sections)
            covers = f"[{name}]({_link(b.part.notebook)}): Setup; {heads}"
            if b.run_cells:
                labels = ", ".join(f"[{n}]" for n in execution_counts(b.part.notebook, list(b.run_cells)))
                covers += f" — run only cells {labels}"
            est, factor = f"{b.estimate:.0f}", f"{ROOM_FACTOR[b.kind]}×"
        lines.append(f"| {clock(b.start)}–{clock(b.start + b.minutes)} | {b.title} | {covers} | "
                     f"{est} | {factor} | {b.minutes} |")
    return "\n".join(lines)


BEGIN_MARK = "<!-- agenda: generated by `python -m courseware.workshop table` -->"
END_MARK = "<!-- end of agenda -->"


GUIDE = ROOT / "docs" / "workshop" / "README.md"
FACILITATOR = ROOT / "docs" / "workshop" / "facilitator.md"


def _guide_text(path: Path) -> tuple[str, str]:
    """The guide as it is, and as it should be with today's agenda table."""
    text = path.read_text(encoding="utf-8")
    start, end = text.index(BEGIN_MARK) + len(BEGIN_MARK), text.index(END_MARK)
    return text, text[:start] + "\n" + markdown_table() + "\n" + text[end:]


def guide_is_current(path: Path = GUIDE) -> bool:
    """True when the guide's agenda table is the one `markdown_table()` prints."""
    text, wanted = _guide_text(path)
    return text == wanted


def write_guide(path: Path = GUIDE) -> bool:
    """Replace the agenda table between the guide's markers; True when the file changed."""
    text, new = _guide_text(path)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def write_facilitator(path: Path = FACILITATOR) -> bool:
    """Write docs/workshop/facilitator.md from `facilitator_markdown()`; True when it changed."""
    text = facilitator_markdown()
    changed = not path.exists() or path.read_text(encoding="utf-8") != text
    if changed:
        path.write_text(text, encoding="utf-8")
    return changed


FACILITATOR_HEAD = """# The facilitator's script

Per block: the clock time it starts and its checkpoint (when it must end), what to say and show,
what to cut when you are behind, the questions people ask with a short answer, and where the
helpers should look. Printed from `courseware.workshop` (the agenda's times follow the lessons'
estimates); do not edit by hand: `python -m courseware.workshop write-guide`.

**Running late?** At each checkpoint, compare the clock with the time below. Five minutes behind:
take the block's "cut". Ten minutes behind at the second break: skip the 06 highlights (homework),
keep the wrap-up's feedback form.
"""

FACILITATOR_TAIL = """
## Collecting the labs

At the end of the lab block (or after the session), ask everyone to copy their `labs/` folder to
the shared drive or the USB stick, into a folder named after them (or to prefix the files with their
name and an underscore: `ada_01_make_it_concurrent.ipynb`). Then, on your laptop:

```bash
make collect DIR=/media/usb/collected     # = python scripts/collect_labs.py /media/usb/collected
```

It runs every notebook headless (the labs report) and prints one line per learner with a mark per
exercise (✔ passed, · not yet, ✗ error) and, under it, each exercise with who is stuck on it and
the first line of the check's message: that is where to start the next session.
"""


def script_of(block: Block) -> dict:
    """The facilitator's script for a block: the welcome's and the opening's by their role, any
    other block's by its title."""
    if block.kind == "welcome":
        return SCRIPT["welcome"]
    return SCRIPT["opening" if block.title.startswith("Opening") else block.title]


def facilitator_markdown(plan: tuple[Block, ...] = PLAN) -> str:
    """docs/workshop/facilitator.md: the script of SCRIPT with each block's clock times."""
    out = [FACILITATOR_HEAD]
    for block in agenda(plan):
        span = f"{clock(block.start)}–{clock(block.start + block.minutes)}"
        out.append(f"## {span} · {block.title}\n")
        if block.kind == "break":
            out.append(f"Back at **{clock(block.start + block.minutes)}**. Helpers: the laptops that were "
                       "stuck in the last block.\n")
            continue
        script = script_of(block)
        if block.run_cells:
            labels = ", ".join(f"[{n}]" for n in execution_counts(block.part.notebook, list(block.run_cells)))
            out.append(f"Open `{block.part.notebook}`, run only the cells {labels} (select them, "
                       "*Run → Run Selected Cells*).\n")
        out.append(f"- **Checkpoint {clock(block.start + block.minutes)}**: {script['checkpoint']}")
        out.append(f"- **Say**: {script['say']}")
        out.append(f"- **Show**: {script['show']}")
        out.append(f"- **Behind? Cut**: {script['cut']}")
        out.append(f"- **Helpers look at**: {script['helpers']}")
        out.append("\n| question | answer |\n|---|---|")
        for question, answer in script["questions"]:
            out.append(f"| {question} | {answer} |")
        out.append("")
    return "\n".join(out) + FACILITATOR_TAIL


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m courseware.workshop")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("table", help="print the agenda table")
    sub.add_parser("write-guide", help="write the agenda table into docs/workshop/README.md")
    args = parser.parse_args(argv)
    if args.command == "table":
        print(markdown_table())
        print(f"\ntotal: {total()} of {LENGTH} minutes")
    else:
        print("docs/workshop/README.md: " + ("agenda updated" if write_guide() else "agenda unchanged"))
        print("docs/workshop/facilitator.md: " + ("written" if write_facilitator() else "unchanged"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

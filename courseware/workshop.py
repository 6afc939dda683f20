"""The three-hour workshop: every block, its times, its script and its handouts, from one plan.

`PLAN` names, per block, the notebook stretch it covers and the steps it takes through it (a
section, one cell, a lab's exercise), each with how the room works it: you run it on the projector
(`show`), you type it live (`type`), everyone runs it (`own`), pairs work it (`pairs`). From that one
definition come the agenda's minutes and clock times, the in-block time cues, the teaching /
exercises split, the facilitator's script (docs/workshop/facilitator.md), the one-page run sheet, the
demo table and homework list in docs/workshop/README.md, the feedback form, the shared notes
template, the helpers' protocol and the highlights notebooks (docs/workshop/highlights/). Every
section reference in the script is written `{§N}` and checked to name something inside its block
(`{home §N}` names one outside it: homework); `tests/test_workshop_*.py` keep all of it true.

Example:
    ```python
    from courseware.workshop import agenda, total
    [(b.start, b.title, b.minutes) for b in agenda()][:2]
    total()                      # 180
    ```

How a block is priced. A step's minutes are `courseware.course.estimate_cells` of its cells (the
arithmetic of every stated time: words, code cells and lines; one run margin per block), without the
learner's own predicting, output reading and error hunting, times the room factor for the block's
kind. The room factor: the estimate is one learner at their own pace; a room of 25 with two helpers
goes slower. A tryout of the course's first agenda measured 190-216 minutes by the estimate and
215-260 in a room of 25, i.e. 1.13-1.20x; demonstrations get 1.25x (that ratio plus talking while
running), labs 1.5x (pairs read the task together, run the check, and a stuck pair waits for a
helper once). A step typed live is priced at a typing rate instead: `LIVE_CHARS_PER_MINUTE`.

Taught in `docs/workshop/README.md` (the instructor's guide).
"""

from __future__ import annotations

import ast
import builtins
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from courseware.course import RUN_MARGIN_MINUTES, estimate_cells, round_to_five

ROOT = Path(__file__).resolve().parent.parent
LENGTH = 180
"""The session, in minutes, breaks included."""
WRAP_UP = (10, 15)
"""The wrap-up takes what is left of the session: at least its planned items (minute cards and the
feedback form, the homework), at most 15 (more than that and the plan should teach one more block)."""
OPENING = (20, 25)
"""Welcome, housekeeping, pairs and 25 laptops running the doctor: realistic room time, in minutes."""
ROOM_FACTOR = {"demo": 1.25, "live": 1.25, "highlights": 1.25, "lab": 1.5}
"""Room minutes per estimated minute, by kind of block (see the module's docstring)."""
LIVE_CHARS_PER_MINUTE = 51
"""Code typed live, all in: say each line as you type it, run it, explain its output, with the room
typing along. Measured from the Carpentries' own budget: Software Carpentry's two Python lessons
(swcarpentry/python-novice-inflammation and python-novice-gapminder, their episodes' `teaching:`
minutes, which exclude exercises) give 490 teaching minutes to 858 lines, 25,128 characters, of code
typed live outside their challenges (blank and comment lines left out, leading spaces not counted):
51 characters a minute, about 10 words a minute. Counted per character, not per line: their lines
average 29 characters, lesson 02's node 53."""
LIVE_SOURCE = ("https://github.com/swcarpentry/python-novice-inflammation",
               "https://github.com/swcarpentry/python-novice-gapminder")
LEARNERS = 25
"""The room the kit is planned for."""
LEARNERS_PER_HELPER = 8
"""The Carpentries recommend one helper for every 8-10 learners, not counting the instructors
(https://docs.carpentries.org/resources/workshops/checklists.html, the host's checklist); the
cautious end, since a three-hour session has no afternoon to catch up."""
CARPENTRIES_CHECKLISTS = "https://docs.carpentries.org/resources/workshops/checklists.html"
CARPENTRIES_LIVE_CODING = "https://carpentries.github.io/instructor-training/17-live.html"
NOTES_LINK = "<the link to your shared notes>"
"""The placeholder the notes template, the welcome and the checklist show until you paste yours."""
REPOSITORY_LINK = "<the course repository's address>"
FILES_PATH = "/blob/HEAD"
"""What comes between a repository's address and one of its files in a link that opens the file on
GitHub (`https://github.com/ada/toolnode-lab/blob/HEAD/labs/...`; without it GitHub answers 404)."""
GITLAB_FILES_PATH = "/-/blob/HEAD"
"""The same on GitLab."""
EXERCISE_MODES = ("pairs", "own")
MODES = {
    "show": "you run it on the projector; the room predicts each `guess` cell aloud, then runs it too",
    "type": "you type it, saying each line; the room types along in a new cell (or watches)",
    "own": "everyone runs it on their laptop",
    "pairs": "pairs work it; helpers walk the rows",
}
"""How the room works a step. `pairs` and `own` steps are the block's exercise minutes."""


def _kernel_name() -> str:
    from courseware.nbtools import KERNELSPEC

    return KERNELSPEC["display_name"]


KERNEL = _kernel_name()
"""The kernel's name as JupyterLab shows it under `make lab`, and as every notebook stores it."""


@dataclass(frozen=True)
class Part:
    """One notebook stretch a block covers: `core`, `§N` (a `## N.` section) or `Exercise N`."""

    notebook: str
    selectors: tuple[str, ...] = ("core",)


@dataclass(frozen=True)
class Step:
    """One stretch of a block, in order.

    `where`: `Setup`, `§N` (the section, less any cell another step of the block names), `§N Name`
    (the code cell of section N that defines `Name`; `§N Name,Other`: the cells that define each)
    or `Exercise N`. `mode`: one of `MODES`. `note`: what to do, with references written `{§N}`
    (see `render`). `label`: what the script calls the step, when not its `where`."""

    where: str
    mode: str
    note: str = ""
    label: str = ""


@dataclass(frozen=True)
class Cut:
    """What to drop when behind: a step (`where`, as in `Step`), or the block itself (`where=""`).
    With `instead`, the step is not dropped but worked in that mode (say, shown instead of typed)."""

    where: str
    how: str
    instead: str = ""


@dataclass(frozen=True)
class Block:
    """One agenda row: its definition, and (filled by `agenda`) its clock, minutes and cues."""

    title: str
    kind: str  # welcome | demo | live | lab | highlights | break | wrap-up
    part: Part | None = None
    fixed: int | None = None
    does: str = ""
    steps: tuple[Step, ...] = ()
    items: tuple[tuple[str, int], ...] = ()
    objectives: tuple[str, ...] = ()
    key_points: tuple[str, ...] = ()
    say: str = ""
    room: str = ""
    checkpoint: str = ""
    cuts: tuple[Cut, ...] = ()
    never_cut: str = ""
    helpers: str = ""
    questions: tuple[tuple[str, str], ...] = ()
    role: str = ""  # "hardest" | "buffer" | ""
    slack: int = 0
    """Minutes planned beyond the estimate, after the last step: for what it cannot see (typos typed
    along, questions). Only where the room's pace varies most: the hardest block."""
    start: int = 0
    minutes: int = 0
    estimate: float = 0.0
    sections: tuple[str, ...] = field(default=())
    run_cells: tuple[int, ...] = field(default=())  # empty: a highlights block opens `highlights`
    cues: tuple[tuple[int, str], ...] = field(default=())
    decisions: tuple[tuple[int, str, str], ...] = field(default=())
    """(minute, in a word, what to decide): halfway through a step typed live (`decision_cues`)."""
    exercises: int = 0
    saves: tuple[int, ...] = field(default=())
    highlights: str = ""

    @property
    def teaching(self) -> int:
        """Minutes of the block that are not exercises (`pairs` and `own` steps)."""
        return self.minutes - self.exercises

    @property
    def end(self) -> int:
        return self.start + self.minutes


BREAK_NOTE = ("Before they stand up: **sticky notes** on the lid, green if the block worked, red if "
              "stuck (online: a ✅ or ❌ reaction), and a **minute card**: one thing that worked, one "
              "that did not (online: the shared notes' minute-card section). Over the break: helpers "
              "visit every red note first; you read the cards and answer the most common question "
              "when the room is back.")

SLACK_NOTE = ("{} min beyond the estimate, for what it cannot see: questions, a typo's fix on a screen "
              "that fell behind; there early, take questions, then start the next block")
"""The step-table row of a block's planned slack."""

DECISION_NOTE = ("halfway through the typing: fewer than half the room has typed this far? Take the "
                 "block's first cut now: {how} (gives back about {saves} min from here)")
"""The step-table row halfway through a step typed live: the moment its cut still gives time back."""

PLAN: tuple[Block, ...] = (
    Block(
        "Welcome · code of conduct, housekeeping, pairs", "welcome",
        does="who we are, the code of conduct, where things are, sticky notes, pairs",
        items=(
            ("who we are: the day on the wall, breaks at the times shown", 2),
            ("code of conduct: its three rules aloud (code-of-conduct.md), and who to tell", 2),
            ("housekeeping: exits, toilets, water; no Wi-Fi or API key needed; the shared notes' link", 2),
            ("sticky notes: green = done, red = stuck, on the lid; a minute card at each break", 1),
            ("pairs: one laptop runs, the other reads the prediction; hints before solutions; "
             "`make lab`, lesson 00 open", 3),
        ),
        say="Who we are, the plan on the wall, breaks at the times shown; the code of conduct; no "
            "Wi-Fi or API key needed today. Sit in pairs: one laptop runs, the other reads the "
            "prediction aloud.",
        checkpoint="every pair has lesson 00 open in JupyterLab",
        cuts=(Cut("", "introductions round the room: names only"),),
        helpers="walk the room: a laptop without JupyterLab open is the first to help",
        questions=(("Can I work alone?", "Yes, but predict out loud to yourself: the checks reward it."),),
    ),
    Block(
        "Opening · 00 Start here", "demo", Part("notebooks/00_start_here.ipynb", ("§1", "§3")),
        does="the opening deck; the map; the pre-flight check run by everyone",
        steps=(
            Step("Setup", "show", "everyone has started `make lab`; run the Setup cell together"),
            Step("§1", "show", "the map: point at today's rows, say the rest is homework"),
            Step("§3", "own", "everyone runs the pre-flight cells and reads the verdict aloud; a "
                              "`NOT ready` laptop gets a red sticky note and the failed-laptop protocol"),
        ),
        objectives=("Run the course offline on a laptop",
                    "Read the pre-flight check's verdict and its fixes"),
        key_points=("Everything runs offline: a scripted model, no key, no network.",
                    "Each failing check prints its own fix."),
        say="Three hours, offline, on your laptop: how LangGraph runs the tools a model asks for. We "
            "predict before we run; your timings differ from mine and the checks still pass.",
        room="run {§3}'s check with you; FAILs go to a helper",
        checkpoint="every laptop says ready, or its owner is on their pair's laptop (failed-laptop protocol)",
        cuts=(Cut("§1", "point at the map on the projector and move on"),),
        never_cut="never the pre-flight check",
        helpers="every screen's verdict; a FAIL line names its fix (preflight.md)",
        questions=(
            ("Do I need an API key?",
             "No: a scripted model answers; {04 §8} shows the switch to a real one."),
            ("My check says `pinned versions` FAIL",
             "`make setup` (or `make offline-install` from the stick)."),
        ),
    ),
    Block(
        "01 · Sequential vs asyncio.gather", "demo",
        Part("notebooks/01_sequential_vs_gather.ipynb", ("§1", "§2", "§3", "§4")),
        does="predict, then run: the timelines carry the argument",
        steps=(
            Step("Setup", "show", "run it; say what the stopwatch and the recorder are for"),
            Step("§1", "show", "two awaits in a row: ask how long two 0.5 s calls take"),
            Step("§2", "show", "ask first: the same two 0.5 s calls, gathered: how long? Run it; then "
                               "the timelines, the two calls again at 0.1 s each, awaited in a row and "
                               "gathered: ask where the second bar starts in each"),
            Step("§3", "pairs", "pairs agree on a prediction for the `guess` cell (the order the calls "
                                "complete in), then run it and the order gather returns"),
            Step("§4", "show", "the capital, then its weather: why this pair stays sequential"),
        ),
        objectives=("Predict how long sequential and gathered calls take",
                    "Say in which order gather returns its results",
                    "Tell which calls must stay sequential"),
        key_points=("Two awaits in a row wait for the sum; gather waits for the longest.",
                    "Results come back in argument order, whatever order the calls finish in.",
                    "A call that needs another's answer cannot be gathered with it."),
        say="Two awaits in a row wait for the sum; `gather` waits for the longest. Results come back in "
            "argument order, not finishing order. A call that needs another's answer stays sequential.",
        room="each cell after you, predicting first",
        checkpoint="everyone has run {§2}'s timelines and can say why gather returns in argument order",
        cuts=(Cut("§1", "say it in one sentence (two awaits in a row wait for the sum) and start at {§2}"),),
        never_cut="never {§2-§4}: lab 01's checks point to them",
        helpers=f"a `ModuleNotFoundError: helpers`: that JupyterLab is not the course's (its kernel is "
                f"called *{KERNEL}* too, so look at the error, not the name): close it, start `make lab`",
        questions=(
            ("Does gather run the calls in threads?", "No: one thread, one event loop; the waits overlap."),
            ("Why do my numbers differ from the screen?",
             "Different laptops; the asserts are ratios with margins."),
            ("What if one of them fails?",
             "{home §5}: the first exception escapes and the others' answers are lost."),
        ),
    ),
    Block(
        "Lab 01 · Make it concurrent, exercise 1 (pairs)", "lab",
        Part("labs/01_make_it_concurrent.ipynb", ("Exercise 1",)),
        does="one turn, six calls: gather, answer each call by its id",
        steps=(
            Step("Setup", "show", "run Setup together; read exercise 1's task aloud, run `q1.check()` "
                                  "on the empty function so they see a `not yet`, then `q1.hint()`"),
            Step("Exercise 1", "pairs", "one types, one reads the check's message; fast pairs go on to "
                                        "{home Exercise 2}"),
        ),
        objectives=("Run every call of one turn at once and return the answers in the calls' order",),
        key_points=("`q1.check()` says what it expected, what it saw and which section to re-read.",
                    "Gather the calls; pair each answer with its call's id."),
        say="Pairs: one types, one reads the check's message. `q1.check()` says what it expected, what "
            "it saw and which section to re-read; `q1.hint()` before asking.",
        room="{Exercise 1} in pairs",
        checkpoint="most pairs see ✔ for q1",
        never_cut="never this lab: stop at the clock, unfinished pairs finish {Exercise 1} at home",
        helpers="walk the rows; a pair staring at the same `not yet` for 3 minutes gets `q1.hint(2)`",
        questions=(
            ("Can I see the solution?",
             "Hints first, by agreement: `q1.hint()`, then `q1.hint(2)`, then a helper. `q1.solution()` "
             "works on most laptops (a clone has `labs/solutions/`; the stick's copy has none); the "
             "instructor shows it on the projector after the checkpoint."),
            ("My check says 'took the sum of the waits'", "The calls are awaited one by one: gather them."),
        ),
    ),
    Block("Break", "break", fixed=10),
    Block(
        "02 · A hand-built tool node, typed live", "live",
        Part("notebooks/02_custom_async_tool_node.ipynb", ("§1", "§2", "§3")),
        does="anatomy of a call and the allow-list, shown; the minimal node typed live, then run",
        steps=(
            Step("Setup", "show", "run it"),
            Step("§1", "show", "a call is a name, arguments and an id; its answer is a ToolMessage "
                               "with that id"),
            Step("§2", "show", "the allow-list is a dict by name: `os.system` is not in it"),
            Step("§3 MinimalAsyncToolNode", "type", "type the class, saying each line as you type it"),
            Step("§3", "show", "run it: predict how many calls are in flight at the peak; then its two "
                               "limits: an unknown name raises (say it: the lesson shows no cell for it), "
                               "and one failing call sinks the batch (run that cell)"),
        ),
        objectives=("Write a tool node: a loop over the last message's tool calls",
                    "Refuse a tool that is not on the allow-list",
                    "Answer every call with a ToolMessage that carries its id"),
        key_points=("A tool node reads the last AIMessage's tool calls and answers each with a "
                    "ToolMessage whose `tool_call_id` is the call's id.",
                    "The allow-list is a dict of tools by name: nothing else runs.",
                    "The minimal node raises on an unknown name and loses the batch when one call fails."),
        say="A tool node is a loop over the last message's tool calls: look each name up in an "
            "allow-list, run it, answer with a ToolMessage carrying its id.",
        room="type the class along with you in a new cell, or watch and run the lesson's cell",
        checkpoint="the node answered both calls on every screen; the room names its two limits",
        cuts=(Cut("§3 MinimalAsyncToolNode", "paste it (or the rest of it) from the lesson and explain "
                                             "it line by line, instead of typing it", instead="show"),
              Cut("§1", "say its point in a sentence (one answer per call id) and start at {§2}")),
        helpers="typos in the typed class: compare with the lesson's cell under {§3}",
        questions=(
            ("Why not just call the tool?",
             "The model needs one answer per call id, or its next turn fails."),
            ("Where is the timeout?",
             "{home §4}: `asyncio.wait_for` per call, and its own TimeoutError trap."),
        ),
        role="hardest",
        slack=5,
    ),
    Block(
        "03 · The built-in ToolNode: standalone and its errors", "demo",
        Part("notebooks/03_builtin_toolnode.ipynb", ("§1", "§2", "§4")),
        does="ToolNode in a graph and on its own; what the default error policy answers and what it raises",
        steps=(
            Step("Setup", "show", "run it"),
            Step("§1", "show", "the same two calls through ToolNode in a graph: the node you typed, "
                               "built in"),
            Step("§2", "show", "the `'N/A'` error and its fix (`runtime=Runtime()`)"),
            Step("§4", "pairs", "before the pairs start, say: under `invoke`, ToolNode runs each call "
                                "on a thread of a pool, and `max_concurrency`, given in `config`, caps "
                                "the pool (at 1: one thread); {home §3} shows it. Pairs agree on what "
                                "the default does before each case (a missing argument, a ValueError, "
                                "an unknown tool, a failing call next to slow ones, then one thread): "
                                "the first in the `guess` cell, the rest on paper or aloud; then run "
                                "it. You then take the room through the case most pairs got wrong"),
        ),
        objectives=("Predict what ToolNode's default error policy answers and what it raises",
                    "Run ToolNode outside a graph"),
        key_points=("Outside a graph, ToolNode needs its runtime passed in.",
                    "By default argument errors become error ToolMessages and every other exception "
                    "crashes the run; an unknown tool name is always answered.",
                    "One failing call loses its siblings' results unless `handle_tool_errors` answers it."),
        say="ToolNode outside a graph needs its runtime; inside, errors follow `handle_tool_errors`: by "
            "default argument errors become messages and everything else raises.",
        room="{§1}-{§2} after you; then {§4} in pairs, predicting before each cell",
        checkpoint="the room can say what the default policy does with a ValueError",
        cuts=(Cut("§1", "run its cell without comment: {§2} needs the node it builds"),),
        never_cut="never {§4}: it is the block's point",
        helpers="a `raises-exception` cell is meant to fail: check the error is the one the prose names",
        questions=(
            ("Doesn't ToolNode catch errors?",
             "Not every error: since release 1.0.2 of langgraph-prebuilt the default answers argument "
             "errors and raises the rest ({§4}); every other `handle_tool_errors` setting is {home §7}."),
            ("Does it run the calls at once?",
             "Yes, {home §3}: a thread pool under invoke, gather under ainvoke."),
        ),
    ),
    Block("Break", "break", fixed=10),
    Block(
        "05 highlights · how return values become ToolMessage content", "highlights",
        Part("notebooks/05_return_types.ipynb", ("§5",)),
        does="predict on paper, then the highlights notebook's Run All to compare, then section 5 together",
        steps=(
            Step("§5 weather,count", "pairs",
                 "notebooks closed (the highlights notebook's text gives answers away): show the "
                 "eight tools on the projector; pairs write on paper what four of them become as "
                 "ToolMessage content: `weather` (a dict), `count` (an int), `nothing` (None), `names` "
                 "(a list of strings)", label="predict on paper"),
            Step("Setup", "own", "everyone opens the highlights notebook, runs *Run → Run All Cells* and "
                                 "compares the table of eight answers with the pair's paper"),
            Step("§5", "show", "walk through it on the projector: the two steps that make the content, "
                               "the table against the room's answers (which did most pairs get wrong?), "
                               "then the side-by-side table"),
        ),
        objectives=("Predict what the model reads for each kind of return value",),
        key_points=("A string passes; a dict becomes JSON; content blocks stay a list of blocks.",),
        say="Predict first, on paper: what does the model read when a tool returns a dict, a number, "
            "None, a list? Whatever a tool returns becomes a ToolMessage's content: a string passes, a "
            "dict is JSON, content blocks stay blocks.",
        room="predict four answers on paper in pairs; then Run All in the highlights notebook and compare; "
             "then read each answer as you point at it",
        checkpoint="every pair has checked its four predictions against {§5}'s table",
        cuts=(Cut("Setup", "you run it on the projector and the pairs compare from there; nobody opens "
                           "the notebook"),
              Cut("", "the whole block goes home: lesson 05 and lab 05")),
        helpers="a notebook that stops at an error: it is the lesson's notebook, not the highlights one; "
                "open the highlights notebook and Run All",
        questions=(("What does the model see for a dict?",
                    "`json.dumps(..., ensure_ascii=False)` of it ({§5})."),),
        role="buffer",
    ),
    Block(
        "Wrap-up · minute cards, feedback, homework", "wrap-up",
        does="minute cards and the feedback form, then the homework order, the cheat sheets, the solutions",
        items=(
            ("feedback: the form (feedback.md) and a last minute card; collect both", 5),
            ("homework: the order, the cheat sheets, where the solutions are", 5),
        ),
        say="Five minutes of feedback first, while everyone is here; then the homework order, the cheat "
            "sheets and the handout.",
        checkpoint="forms collected; USB sticks back",
        never_cut="never the feedback form",
        helpers="collect the forms, the minute cards and the sticks",
        questions=(
            ("Where are the solutions?",
             "In the course repository's `labs/solutions/` (its address is in the shared notes): a clone "
             "has them, and `q1.solution()` prints them. The stick's copy has none, and `git pull` there "
             "brings none: clone the repository at home."),
        ),
    ),
)
"""The plan: which parts each block covers, its steps, its script. Minutes are computed."""

LAB_AFTER = {"labs/03_error_policy.ipynb": "notebooks/08_interceptors.ipynb"}
"""A lab that waits for a later lesson than its own: lab 03's checks use interceptors (lesson 08)."""


def _homework() -> tuple[str, ...]:
    """After the session: lab 01 (its second exercise), then from lesson 02 on each lesson followed by
    its lab, in the course map's order; a lab of `LAB_AFTER` after the lesson it waits for."""
    from courseware.course import LESSONS

    out = ["labs/01_make_it_concurrent.ipynb"]
    waiting = {lesson: lab for lab, lesson in LAB_AFTER.items()}
    for row in LESSONS:
        if row.number < 2:
            continue
        out.append(row.file)
        if row.lab and row.lab not in LAB_AFTER:
            out.append(row.lab)
        if row.file in waiting:
            out.append(waiting[row.file])
    return tuple(out)


HOMEWORK: tuple[str, ...] = _homework()
"""After the session, in this order (`_homework`)."""

FAILED_LAPTOP: tuple[tuple[int, str, str], ...] = (
    (2, "its fix", "A helper reads the check's `FAIL` lines with the learner and runs the `fix:` each "
                   "one names (most often `make setup`)."),
    (5, "the stick", "No network, or pip fails: install from the stick, `make offline-install "
                     "WHEELHOUSE=<stick>/wheelhouse` (preflight.md). Wrong kernel: close that "
                     "JupyterLab, `make lab`."),
    (10, "the pair's laptop", "Still not `ready`: the learner works on their pair's laptop and keeps "
                              "going; the helper goes on fixing beside them, or at the next break."),
    (0, "Binder or the handout", "Not fixed by the break: the Binder link (it needs the venue's "
                                 "network) or the handout on the stick (`handout/index.html`) to read "
                                 "along. Note the laptop's system and Python for the tally."),
)
"""The failed-laptop protocol: (minutes since the learner raised it, in a word, what happens by
then); 0 = at the next break. Printed into docs/workshop/helpers.md and the facilitator's script."""


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


# -- what a stretch needs from above ---------------------------------------------------------------
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

    The highlights notebooks hold exactly these code cells (`highlights_notebook`)."""
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


def borrowed(part: Part) -> list[int]:
    """The code cells outside the part that it needs run first (earlier sections' definitions)."""
    _, indices = selected(part)
    return [i for i in cells_to_run(part) if i not in indices]


def execution_counts(notebook: str, indices: list[int]) -> list[int]:
    """The `[n]` labels JupyterLab shows beside these cells in the committed notebook."""
    cells = cells_of(notebook)
    return [cells[i].get("execution_count") or 0 for i in indices]


# -- steps: which cells, how long ------------------------------------------------------------------
_STEP = re.compile(r"^(?:(?P<setup>Setup)|§(?P<n>\d+)(?: (?P<name>\w+(?:,\w+)*))?"
                   r"|(?P<exercise>Exercise \d+))$")


def _section_of(part: Part, where: str) -> tuple[str, list[int]]:
    """The heading and cells of `Setup`, `§N` or `Exercise N` in the part's notebook."""
    groups = sections(cells_of(part.notebook))
    selector = where.split(" ")[0] if where.startswith("§") else where
    for heading, indices in groups:
        if heading and (heading == selector or _matches(heading, selector)):
            return heading, indices
    raise LookupError(f"{part.notebook} has no section {selector!r}: its sections are "
                      f"{[h for h, _ in groups if h]}")


def _defining_cells(part: Part, where: str) -> list[int]:
    """The code cells of `§N` that define each name of a step written `§N Name` or `§N Name,Other`."""
    match = _STEP.match(where)
    cells = cells_of(part.notebook)
    _, indices = _section_of(part, where)
    out = []
    for name in match.group("name").split(","):
        found = [i for i in indices if cells[i]["cell_type"] == "code"
                 and name in _names(_source(cells[i]))[0]]
        if not found:
            raise LookupError(f"{part.notebook} {where.split(' ')[0]} has no code cell that defines "
                              f"{name!r}")
        if found[0] not in out:
            out.append(found[0])
    return sorted(out)


def step_cells(block: Block, step: Step) -> list[int]:
    """The cells a step covers: its section less the cells other steps name, or its one cell. A
    highlights block's Setup step also holds the earlier cells the block borrows (`borrowed`)."""
    if not _STEP.match(step.where):
        raise ValueError(f"{block.title}: step {step.where!r} is not Setup, §N, §N Name or Exercise N")
    if _STEP.match(step.where).group("name"):
        return _defining_cells(block.part, step.where)
    _, indices = _section_of(block.part, step.where)
    claimed = {i for other in block.steps if other is not step and _STEP.match(other.where).group("name")
               for i in _defining_cells(block.part, other.where)}
    out = [i for i in indices if i not in claimed]
    if step.where == "Setup" and block.kind == "highlights":
        out = sorted(out + borrowed(block.part))
    return out


def typed_characters(cells: list[dict]) -> int:
    """Characters typed to write these code cells: each line without its indentation (an editor
    indents), blank and comment-only lines left out."""
    lines = [line.strip() for cell in cells if cell["cell_type"] == "code"
             for line in _source(cell).splitlines()]
    return sum(len(line) for line in lines if line and not line.startswith("#"))


def _room_estimate(cells: list[dict], margin: float = 0) -> float:
    estimate = estimate_cells(cells, margin=margin)
    # ROOM_FACTOR was measured against the estimate without a learner's own predictions, output
    # reading and error hunting: in the room the instructor runs, reads out and explains those.
    return replace(estimate, predictions=0, output_lines=0, errors=0).exact_minutes


def step_minutes(block: Block, step: Step, mode: str | None = None) -> float:
    """Exact room minutes of one step (worked in `mode`, by default its own)."""
    cells = cells_of(block.part.notebook)
    chosen = [cells[i] for i in step_cells(block, step)]
    mode = mode or step.mode
    if mode == "type":
        return typed_characters(chosen) / LIVE_CHARS_PER_MINUTE
    factor = ROOM_FACTOR["lab"] if mode == "pairs" else ROOM_FACTOR[block.kind]
    return _room_estimate(chosen) * factor


def block_estimate(part: Part, highlights: bool = False) -> float:
    """The course's estimate, in exact minutes, of the cells a part covers, plus one run margin
    (for highlights, with the earlier cells it must run as well), before any room factor."""
    cells = cells_of(part.notebook)
    _, indices = selected(part)
    if highlights:
        indices = sorted(set(indices) | set(cells_to_run(part)))
    return _room_estimate([cells[i] for i in indices], margin=RUN_MARGIN_MINUTES)


def _margin_step(block: Block) -> int:
    """The index of the step that carries the block's run margin (opening the notebook, starting the
    kernel, the slowest cells): its Setup step, wherever it comes; else the first."""
    return next((i for i, step in enumerate(block.steps) if step.where == "Setup"), 0)


def _steps_exact(block: Block) -> list[float]:
    """Each step's exact minutes; the block's run margin (times its factor) goes to `_margin_step`."""
    exact = [step_minutes(block, step) for step in block.steps]
    exact[_margin_step(block)] += RUN_MARGIN_MINUTES * ROOM_FACTOR[block.kind]
    return exact


def agenda(plan: tuple[Block, ...] = PLAN) -> list[Block]:
    """The plan with each block's clock, minutes, estimate, cues, exercises and cuts' savings."""
    out, now = [], 0
    for block in plan:
        cues: list[tuple[int, str]] = []
        halfway: list[tuple[int, Step]] = []
        decisions: tuple[tuple[int, str, str], ...] = ()
        heads: tuple[str, ...] = ()
        exercises, saves, highlights_path = 0, (), ""
        if block.kind == "wrap-up":  # the rest of the session
            minutes = LENGTH - now
            exact = float(minutes)
        elif block.items:
            minutes = exact = sum(m for _, m in block.items)
        elif block.fixed is not None:
            minutes, exact = block.fixed, float(block.fixed)
        else:
            parts = _steps_exact(block)
            exact = sum(parts)
            minutes = round_to_five(exact + block.slack)
            scale = (minutes - block.slack) / exact
            done = 0.0
            for step, part_minutes in zip(block.steps, parts, strict=True):
                cues.append((now + round(done * scale), step.where))
                if step.mode == "type":
                    halfway.append((now + round((done + part_minutes / 2) * scale), step))
                done += part_minutes
            exercises = round(sum(m for s, m in zip(block.steps, parts, strict=True)
                                  if s.mode in EXERCISE_MODES) * scale)
            heads = tuple(selected(block.part)[0])
            if block.kind == "highlights":
                highlights_path = highlights_file(block.part).relative_to(ROOT).as_posix()
            saves = tuple(_saving(block, cut, minutes, scale) for cut in block.cuts)
            decisions = tuple(_decision(block, step, at, saves) for at, step in halfway)
        if block.items:
            done = 0
            for text, item_minutes in block.items:
                cues.append((now + done, text))
                done += item_minutes
        if block.part is None:  # a cut of a block without a notebook is an instruction, not a step
            saves = tuple(0 for _ in block.cuts)
        out.append(replace(block, start=now, minutes=minutes, estimate=round(exact, 1), sections=heads,
                           run_cells=(), cues=tuple(cues), decisions=decisions, exercises=exercises,
                           saves=saves,
                           highlights=highlights_path))
        now += minutes
    return out


def _decision(block: Block, step: Step, at: int, saves: tuple[int, ...]) -> tuple[int, str, str]:
    """The cue halfway through a step typed live: take the block's first cut for the rest, or not.
    Raises `LookupError` when the block's first cut is not that step's."""
    if not block.cuts or block.cuts[0].where != step.where:
        raise LookupError(f"{block.title}: {step.where!r} is typed live, so the block's first cut must be "
                          f"to show it instead (Cut({step.where!r}, ..., instead='show'))")
    how = render(block.cuts[0].how)
    return at, "decide", DECISION_NOTE.format(how=how, saves=halfway_saves(saves))


def halfway_saves(saves: tuple[int, ...]) -> int:
    """Minutes the first cut gives back when taken halfway through the step it cuts."""
    return max(1, round(saves[0] / 2))


def _saving(block: Block, cut: Cut, minutes: int, scale: float) -> int:
    """Whole minutes a cut gives back."""
    if not cut.where:
        return minutes
    step = next(s for s in block.steps if s.where == cut.where)
    saved = step_minutes(block, step) - (step_minutes(block, step, cut.instead) if cut.instead else 0)
    return max(0, round(saved * scale))


def total(plan: tuple[Block, ...] = PLAN) -> int:
    """Minutes of the whole session, breaks included."""
    return sum(b.minutes for b in agenda(plan))


def clock(minutes: int) -> str:
    """`95` → `1:35`."""
    return f"{minutes // 60}:{minutes % 60:02d}"


def helpers_needed(learners: int = LEARNERS) -> int:
    """Helpers to bring for a room of `learners` (`LEARNERS_PER_HELPER`), at least one."""
    return max(1, math.ceil(learners / LEARNERS_PER_HELPER))


def buffer_block(blocks: list[Block] | None = None) -> Block:
    return next(b for b in (blocks or agenda()) if b.role == "buffer")


def hardest_block(blocks: list[Block] | None = None) -> Block:
    return next(b for b in (blocks or agenda()) if b.role == "hardest")


def opening_minutes(blocks: list[Block] | None = None) -> int:
    """The welcome and the opening together: everything before the first lesson block."""
    blocks = blocks or agenda()
    return sum(b.minutes for b in blocks if b.kind == "welcome" or b.title.startswith("Opening"))


# -- references ------------------------------------------------------------------------------------
_REF = re.compile(r"\{([^{}]+)\}")
_SECTION_REF = re.compile(r"^§(\d+)(?:-§(\d+))?$")
_HOME_REF = re.compile(r"^home (§\d+|Exercise \d+)$")
_LESSON_REF = re.compile(r"^(\d\d) §(\d+)$")


def _lesson_file(code: str) -> str:
    from courseware.course import LESSONS

    return next(row.file for row in LESSONS if row.code == code)


def render(text: str) -> str:
    """A script text with its references written out: `{§2}` → §2, `{§2-§4}` → §2–§4,
    `{home §4}` → §4 (homework), `{04 §8}` → lesson 04 §8, `{Exercise 1}` → exercise 1."""
    def one(match: re.Match) -> str:
        ref = match.group(1)
        if (m := _SECTION_REF.match(ref)) is not None:
            return f"§{m.group(1)}" + (f"–§{m.group(2)}" if m.group(2) else "")
        if (m := _HOME_REF.match(ref)) is not None:
            return f"{m.group(1).replace('Exercise', 'exercise')} (homework)"
        if (m := _LESSON_REF.match(ref)) is not None:
            return f"lesson {m.group(1)} §{m.group(2)}"
        if ref.startswith("Exercise "):
            return ref.replace("Exercise", "exercise")
        return match.group(0)
    return _REF.sub(one, text)


def script_texts(block: Block) -> list[str]:
    """Every text of a block's script, as written (before `render`)."""
    texts = [block.say, block.room, block.checkpoint, block.never_cut, block.helpers, block.does]
    texts += [s.note for s in block.steps] + [c.how for c in block.cuts] + list(block.objectives)
    texts += list(block.key_points) + [t for q in block.questions for t in q] + [t for t, _ in block.items]
    return [t for t in texts if t]


def reference_problems(block: Block) -> list[str]:
    """What is wrong with a block's references: a section named outside `{...}`, a `{§N}` or a step
    or cut outside the block, a `{home ...}` inside it, a lesson section that does not exist."""
    problems = []
    inside = set()
    if block.part is not None:
        for heading in selected(block.part)[0]:
            number = _NUMBERED.match(heading)
            inside.add(f"§{number.group(1)}" if number else heading.split(":")[0])
    for text in script_texts(block):
        bare = _REF.sub("", text)
        if "§" in bare or re.search(r"\bcells? \[\d", bare):
            problems.append(f"{block.title}: a section or cell named outside {{...}}: {text!r}")
        for ref in _REF.findall(text):
            if (m := _SECTION_REF.match(ref)) is not None:
                last = int(m.group(2) or m.group(1))
                wanted = {f"§{n}" for n in range(int(m.group(1)), last + 1)}
                if not wanted <= inside:
                    problems.append(f"{block.title}: {{{ref}}} is not inside the block "
                                    f"(it covers {sorted(inside)})")
            elif (m := _HOME_REF.match(ref)) is not None:
                target = m.group(1)
                if target in inside:
                    problems.append(f"{block.title}: {{{ref}}} is inside the block: write {{{target}}}")
                elif block.part is None:
                    problems.append(f"{block.title}: {{{ref}}} but the block has no notebook")
                else:
                    try:
                        _section_of(block.part, target)
                    except LookupError as error:
                        problems.append(f"{block.title}: {{{ref}}}: {error}")
            elif (m := _LESSON_REF.match(ref)) is not None:
                try:
                    _section_of(Part(_lesson_file(m.group(1))), f"§{m.group(2)}")
                except (LookupError, StopIteration) as error:
                    problems.append(f"{block.title}: {{{ref}}}: no such lesson section ({error})")
            elif ref.startswith("Exercise "):
                if ref not in inside:
                    problems.append(f"{block.title}: {{{ref}}} is not inside the block")
            else:
                problems.append(f"{block.title}: {{{ref}}} is not a reference this script knows")
    for where in [s.where for s in block.steps] + [c.where for c in block.cuts if c.where]:
        head = where.split(" ")[0]
        if head != "Setup" and head not in inside and where not in inside:
            problems.append(f"{block.title}: step or cut {where!r} is not inside the block")
    for cut in block.cuts:
        if cut.where and cut.where not in [s.where for s in block.steps]:
            problems.append(f"{block.title}: cut {cut.where!r} names no step of the block")
    return problems


def _where_label(block: Block, where: str) -> str:
    """A step's `label`, else `§3 MinimalAsyncToolNode` → §3's `MinimalAsyncToolNode`; `Exercise 1` →
    exercise 1; a highlights block's Setup → Run All."""
    match = _STEP.match(where)
    label = next((s.label for s in block.steps if s.where == where and s.label), "")
    if label:
        return label
    if where == "Setup" and block.kind == "highlights":
        return "Run All"
    if match and match.group("name"):
        names = match.group("name").split(",")
        return f"§{match.group('n')}'s " + " and ".join(f"`{name}`" for name in names)
    return where.replace("Exercise", "exercise")


# -- the agenda table, the demo table, the homework list (docs/workshop/README.md) -----------------
def _link(notebook: str, base: str = "../../") -> str:
    return f"{base}{notebook}"


def _how(block: Block) -> str:
    """How a block's minutes were reached: the course's estimate per room factor, typed characters
    at the typing rate, their sum (rounded to 5 in the last column)."""
    if block.part is None:
        return "planned" if block.kind != "wrap-up" else "the rest"
    cells = cells_of(block.part.notebook)
    by_factor: dict[float, float] = {}
    typed = 0
    for i, step in enumerate(block.steps):
        chosen = [cells[j] for j in step_cells(block, step)]
        if step.mode == "type":
            typed += typed_characters(chosen)
            continue
        factor = ROOM_FACTOR["lab"] if step.mode == "pairs" else ROOM_FACTOR[block.kind]
        margin = RUN_MARGIN_MINUTES if i == _margin_step(block) else 0
        by_factor[factor] = by_factor.get(factor, 0.0) + _room_estimate(chosen, margin=margin)
    terms = [f"{estimate:.1f} × {factor}" for factor, estimate in sorted(by_factor.items())]
    if typed:
        terms.append(f"{typed:,} typed characters ÷ {LIVE_CHARS_PER_MINUTE}/min")
    slack = f" + {block.slack} slack" if block.slack else ""
    return " + ".join(terms) + f" = {block.estimate:.1f}{slack}"


def markdown_table(plan: tuple[Block, ...] = PLAN) -> str:
    """The guide's agenda table (docs/workshop/README.md), one row per block."""
    lines = ["| clock | block | covers | room minutes: how | teaching / exercises | minutes |",
             "|---|---|---|---|---|---|"]
    for b in agenda(plan):
        role = {"hardest": " **(hardest)**", "buffer": " **(buffer)**"}.get(b.role, "")
        if b.part is None:
            covers = b.does
            split = f"{b.minutes} / 0" if b.kind != "break" else ""
        else:
            name = Path(b.part.notebook).stem
            heads = "; ".join(h.replace("|", "\\|") for h in b.sections)
            covers = f"[{name}]({_link(b.part.notebook)}): Setup; {heads}"
            if b.highlights:
                here = Path(b.highlights).relative_to("docs/workshop")
                covers += f" — as [a highlights notebook]({here}), Run All"
            split = f"{b.teaching} / {b.exercises}"
        lines.append(f"| {clock(b.start)}–{clock(b.end)} | {b.title}{role} | {covers} | {_how(b)} | "
                     f"{split} | {b.minutes} |")
    return "\n".join(lines)


def demo_table(plan: tuple[Block, ...] = PLAN) -> str:
    """What you run on the projector and what the room runs, per block, from the blocks' steps."""
    lines = ["| block | you, on the projector | the room |", "|---|---|---|"]
    for b in agenda(plan):
        if b.part is None:
            continue
        you = [f"{_where_label(b, s.where)} ({s.mode}): {render(s.note)}" for s in b.steps
               if s.mode in ("show", "type")]
        own = [f"{_where_label(b, s.where)} ({s.mode})" for s in b.steps if s.mode in EXERCISE_MODES]
        room_text = render(b.room) + (f" · on their own: {', '.join(own)}" if own else "")
        lines.append(f"| {b.title} | {'; '.join(you) or '—'} | {room_text} |")
    return "\n".join(lines)


def homework_markdown() -> str:
    """The homework, in order, each with its link and stated time, and the total."""
    from courseware.course import LESSONS, hours

    rows, total_minutes = [], 0
    for path in HOMEWORK:
        lesson = next((r for r in LESSONS if r.file == path), None)
        if lesson is not None:
            label, minutes = f"{lesson.code} · {lesson.title}", lesson.minutes
        else:
            row = next(r for r in LESSONS if r.lab == path)
            stem = Path(path).stem
            label, minutes = f"lab {stem[:2]} · {stem[3:].replace('_', ' ')}", row.lab_minutes
        total_minutes += minutes
        rows.append(f"{len(rows) + 1}. [{label}](../../{path}) — about {minutes} min")
    return "\n".join(rows) + (f"\n\nIn all about {total_minutes} minutes ({hours(total_minutes)}), "
                              "deep dives left out.")


# -- generated regions of hand-written files -------------------------------------------------------
def _region(name: str) -> tuple[str, str]:
    return (f"<!-- {name}: generated by `python -m courseware.workshop write-guide` -->",
            f"<!-- end of {name} -->")


BEGIN_MARK, END_MARK = _region("agenda")

GUIDE = ROOT / "docs" / "workshop" / "README.md"
FACILITATOR = ROOT / "docs" / "workshop" / "facilitator.md"
HELPERS = ROOT / "docs" / "workshop" / "helpers.md"
RUN_SHEET = ROOT / "docs" / "workshop" / "run-sheet.md"
FEEDBACK = ROOT / "docs" / "workshop" / "feedback.md"
NOTES = ROOT / "docs" / "workshop" / "notes-template.md"
HIGHLIGHTS = ROOT / "docs" / "workshop" / "highlights"


def _regions() -> dict[Path, dict[str, callable]]:
    """Each hand-written file's generated regions: name → the function that prints it."""
    return {
        GUIDE: {"helpers to bring": helpers_markdown, "room time": room_time_markdown,
                "agenda": markdown_table, "late": late_markdown, "homework": homework_markdown,
                "demo table": demo_table},
        HELPERS: {"helpers to bring": helpers_markdown, "failed-laptop protocol": protocol_markdown},
    }


def _with_regions(path: Path, text: str) -> str:
    for name, printer in _regions().get(path, {}).items():
        begin, end = _region(name)
        if begin not in text or end not in text:
            raise LookupError(f"{path.relative_to(ROOT)} lost its markers for {name!r}: put back "
                              f"{begin} ... {end} where it goes")
        start, stop = text.index(begin) + len(begin), text.index(end)
        text = text[:start] + "\n" + printer() + "\n" + text[stop:]
    return text


def guide_is_current(path: Path = GUIDE) -> bool:
    """True when the guide's generated regions (agenda, demo table, homework, late) are today's."""
    text = path.read_text(encoding="utf-8")
    return text == _with_regions(path, text)


def write_guide(path: Path = GUIDE) -> bool:
    """Rewrite the guide's generated regions; True when the file changed."""
    text = path.read_text(encoding="utf-8")
    new = _with_regions(path, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


# -- the facilitator's script ----------------------------------------------------------------------
FACILITATOR_HEAD = """# The facilitator's script

Per block: the clock time it starts, its objectives, its steps with their clock times, the
checkpoint (when it must end), what to say, what to cut when you are behind (in order, with the
minutes each cut gives back), the questions people ask with a short answer, where the helpers
look, and the key points to close on. Printed from `courseware.workshop`, like the
[run sheet](run-sheet.md) (one page, to print); do not edit by hand: `make workshop-guide`.

How the room works a step: **show**: you run it on the projector, the room predicts each `guess`
cell aloud, then runs it too; **type**: you type it, saying each line; the room types along in a
new cell (or watches); **own**: everyone runs it; **pairs**: pairs work it, helpers walk the rows.
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


def late_markdown(blocks: list[Block] | None = None) -> str:
    """The day's plan for running late: the buffer's cuts first, then each block's own."""
    blocks = blocks or agenda()
    buffer = buffer_block(blocks)
    second_break = [b for b in blocks if b.kind == "break"][-1]
    lines = [f"**The planned buffer is {buffer.title}** ({buffer.minutes} min, "
             f"{clock(buffer.start)}–{clock(buffer.end)}), the last block before the wrap-up. "
             f"Running late, cut in this order:", ""]
    steps = []
    short = buffer.title.split(" · ")[0]
    for cut, saves in zip(buffer.cuts, buffer.saves, strict=True):
        if cut.where:
            steps.append(f"At the second break ({clock(second_break.start)}), up to {saves} min behind: in "
                         f"{short}, {_where_label(buffer, cut.where)} → {render(cut.how)} "
                         f"(gives back {saves} min).")
        else:
            steps.append(f"More behind: drop {short} → {render(cut.how)} (gives back {saves} min).")
    steps.append("At any other checkpoint, 5 minutes behind: the next block's first cut (below); the "
                 "block just ended has none left to take.")
    never = [b.title.split(" · ")[0].replace("Lab", "lab") for b in blocks
             if b.never_cut and not b.cuts and b.kind != "wrap-up"]
    steps.append(f"Never: {', '.join(never)} (stop at the clock instead), the minute cards at the breaks, "
                 "the feedback form.")
    lines += [f"{n}. {text}" for n, text in enumerate(steps, start=1)]
    return "\n".join(lines)


def _lower_first(text: str) -> str:
    """`Run ToolNode …` → `run ToolNode …`; a word in capitals (`ToolNode …`) stays."""
    text = text.rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _step_table(block: Block) -> list[str]:
    out = ["| at | step | how |", "|---|---|---|"]
    if block.part is None:
        for at, text in block.cues:
            out.append(f"| {clock(at)} | {render(text)} | |")
        return out
    rows = [(at, 0, f"| {clock(at)} | {_where_label(block, where)} | **{step.mode}**: {render(step.note)} |")
            for (at, where), step in zip(block.cues, block.steps, strict=True)]
    rows += [(at, 1, f"| {clock(at)} | **{short}** | {text} |") for at, short, text in block.decisions]
    out += [row for _, _, row in sorted(rows, key=lambda r: (r[0], r[1]))]
    if block.slack:
        out.append(f"| {clock(block.end - block.slack)} | slack | {SLACK_NOTE.format(block.slack)} |")
    return out


def _cuts_text(block: Block) -> str:
    parts = []
    for i, (cut, saves) in enumerate(zip(block.cuts, block.saves, strict=True), start=1):
        what = f"{_where_label(block, cut.where)}: {render(cut.how)}" if cut.where else render(cut.how)
        gives = f" (gives back {saves} min)" if saves else ""
        parts.append(f"{i}. {what}{gives}")
    if block.never_cut:
        parts.append(render(block.never_cut))
    return "; ".join(parts)


def facilitator_markdown(plan: tuple[Block, ...] = PLAN) -> str:
    """docs/workshop/facilitator.md: every block's script, with its clock times, from the plan."""
    blocks = agenda(plan)
    out = [FACILITATOR_HEAD, "## Running late?\n", late_markdown(blocks), ""]
    for block in blocks:
        out.append(f"## {clock(block.start)}–{clock(block.end)} · {block.title}\n")
        if block.kind == "break":
            out.append(f"Back at **{clock(block.end)}**. {BREAK_NOTE}\n")
            continue
        facts = [f"{block.minutes} min: teaching {block.teaching}, exercises {block.exercises}"]
        if block.role == "hardest":
            facts.append("the hardest block of the day, right after a break while the room is fresh")
        if block.role == "buffer":
            facts.append("the planned buffer: see *Running late?*")
        out.append(" · ".join(facts) + "\n")
        if block.highlights:
            first = _where_label(block, block.steps[0].where) if block.steps[0].where != "Setup" else ""
            when = f"After the first step ({first}), e" if first else "E"
            out.append(f"{when}veryone opens `{block.highlights}` (in JupyterLab's file browser: docs → "
                       f"workshop → highlights) and runs *Run → Run All Cells*: it holds only "
                       f"`{block.part.notebook}`'s Setup, the earlier cells this section needs, and "
                       f"the section. Opened before the predictions are written, its text gives "
                       f"answers away.\n")
        elif block.part is not None:
            typed = [_where_label(block, s.where) for s in block.steps if s.mode == "type"]
            live = f"build/slides/live/{Path(block.part.notebook).name}"
            if typed:
                out.append(f"Open the live-coding copy, `{live}` (`make live-copy` writes it, `make slides` "
                           f"too): its outputs are cleared and the cell of {', '.join(typed)} is collapsed, "
                           "with an empty cell below it. Type it there and run it: the cells after it then "
                           f"run what you typed. The room types along in their own `{block.part.notebook}` "
                           "(a new cell below that one: *B*), or watches.\n")
            else:
                out.append(f"Open `{block.part.notebook}`.\n")
        if block.objectives:
            out.append("**Objectives**: by the checkpoint, everyone can\n")
            out += [f"- {_lower_first(render(o))}" for o in block.objectives]
            out.append("")
        out += _step_table(block)
        out.append("")
        if block.kind == "welcome":
            out.append(f"The shared notes: put `{NOTES_LINK}` on the wall ([template](notes-template.md)); "
                       f"the code of conduct: [code-of-conduct.md](code-of-conduct.md).\n")
        out.append(f"- **Checkpoint {clock(block.end)}**: {render(block.checkpoint)}")
        out.append(f"- **Say**: {render(block.say)}")
        out.append(f"- **Behind? Cut, in order**: {_cuts_text(block)}")
        out.append(f"- **Helpers look at**: {render(block.helpers)}")
        if block.key_points:
            out.append("- **Key points** (say them at the checkpoint): "
                       + " ".join(render(k) for k in block.key_points))
        out.append("\n| question | answer |\n|---|---|")
        for question, answer in block.questions:
            out.append(f"| {render(question)} | {render(answer)} |")
        out.append("")
    return "\n".join(out) + FACILITATOR_TAIL


def script_of(block: Block) -> dict:
    """A block's script as plain text, by field (what the slides' speaker notes read)."""
    definition = next(b for b in PLAN if b.title == block.title)
    return {
        "say": render(definition.say), "show": "; ".join(
            f"{_where_label(definition, s.where)}: {render(s.note)}" for s in definition.steps)
        or "; ".join(render(t) for t, _ in definition.items),
        "checkpoint": render(definition.checkpoint), "cut": _cuts_text(replace(
            definition, saves=tuple(0 for _ in definition.cuts))),
        "helpers": render(definition.helpers),
        "questions": [(render(q), render(a)) for q, a in definition.questions],
    }


SCRIPT: dict[str, dict] = {b.title: script_of(b) for b in PLAN if b.kind != "break"}
"""The script per block title (also under "welcome" and "opening"): say, show, checkpoint, cut,
helpers, questions, rendered. The slides' speaker notes read it."""
SCRIPT["welcome"] = SCRIPT[PLAN[0].title]
SCRIPT["opening"] = SCRIPT[next(b.title for b in PLAN if b.title.startswith("Opening"))]


# -- the run sheet, the feedback form, the notes template, the helpers' regions --------------------
def run_sheet_markdown(plan: tuple[Block, ...] = PLAN) -> str:
    """docs/workshop/run-sheet.md: the day on one printed page, with the time cues inside each block."""
    blocks = agenda(plan)
    buffer = buffer_block(blocks)
    lines = [
        "# Run sheet",
        "",
        "One page: print it in landscape and keep it beside the laptop. Clock from 0:00 (write your "
        "start time: `____`). Generated from `courseware.workshop` with the "
        "[facilitator's script](facilitator.md), which has the words; `make workshop-guide` rewrites it.",
        "",
        "| clock | block | min | teach / ex | time cues | checkpoint | behind? |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in blocks:
        if b.kind == "break":
            lines.append(f"| {clock(b.start)} | **Break** | {b.minutes} | | sticky notes, minute cards | "
                         f"back at {clock(b.end)} | |")
            continue
        if b.part is None:
            cues = " · ".join(f"{clock(at)} {render(text).split(':')[0]}" for at, text in b.cues)
        else:
            timed = [(at, 0, _where_label(b, where)) for at, where in b.cues]
            timed += [(at, 1, "**halfway: first cut?**") for at, _, _ in b.decisions]
            cues = " · ".join(f"{clock(at)} {label}" for at, _, label in sorted(timed))
            cues += f" · {clock(b.end - b.slack)} slack" if b.slack else ""
        first = (f"{_where_label(b, b.cuts[0].where) + ': ' if b.cuts[0].where else ''}"
                 f"{render(b.cuts[0].how)}" if b.cuts else render(b.never_cut))
        role = {"hardest": " (hardest)", "buffer": " (buffer)"}.get(b.role, "")
        lines.append(f"| {clock(b.start)} | {b.title}{role} | {b.minutes} | {b.teaching} / {b.exercises} | "
                     f"{cues} | {render(b.checkpoint)} | {first} |")
    lines += [
        f"| {clock(LENGTH)} | end | | | | | |",
        "",
        f"**Late**: cut {buffer.title} first ([the order](facilitator.md#running-late)); never lab 01, "
        f"the minute cards or the feedback form. **Helpers**: {helpers_needed()} for {LEARNERS} "
        f"learners. **Failed laptop**: "
        + " → ".join(f"{m} min: {short}" if m else f"the break: {short}" for m, short, _ in FAILED_LAPTOP)
        + " ([helpers.md](helpers.md#when-a-laptop-fails)).",
    ]
    return "\n".join(lines) + "\n"


FREE_TEXT = ("One thing that worked", "One thing to change, or that confused me", "One thing to add")
"""The form's free-text questions: each gets a box of `FREE_TEXT_LINES` empty lines to write in."""
FREE_TEXT_LINES = 5


def feedback_markdown(plan: tuple[Block, ...] = PLAN) -> str:
    """docs/workshop/feedback.md: the one-page form; one line per block's objectives, the day's
    questions, the minute card's two lines."""
    blocks = agenda(plan)
    taught = [b for b in blocks if b.objectives]
    rows = ["| | after today, I can … | block | 1 | 2 | 3 | 4 | 5 |", "|---|---|---|---|---|---|---|---|"]
    n = 0
    for b in taught:
        n += 1
        rows.append(f"| {n} | {_lower_first(render(b.objectives[0]))} | {b.title.split(' · ')[0]} | "
                    "○ | ○ | ○ | ○ | ○ |")
    day = ["| | about the day | | 1 | 2 | 3 | 4 | 5 |", "|---|---|---|---|---|---|---|---|"]
    for text in ("the pace (1 = too slow, 3 = right, 5 = too fast)", "my laptop worked the whole session",
                 "the helpers got me unstuck quickly", "I would recommend this workshop"):
        n += 1
        day.append(f"| {n} | {text} | | ○ | ○ | ○ | ○ | ○ |")
    circle = " · ".join(b.title.split(" · ")[0] for b in taught)
    return "\n".join([
        "# Feedback: toolnode-lab workshop",
        "",
        "Five minutes, anonymous. Circle a number (1 = not at all, 5 = completely), and write a few words "
        "in the boxes at the end where you can. Thank you: the next session is planned from these.",
        "",
        *rows,
        "",
        *day,
        "",
        f"**The block that worked best for me** (circle): {circle}",
        "",
        f"**The block to cut or shorten** (circle): {circle}",
        "",
        "**My laptop** (circle): Linux · macOS (Apple chip) · macOS (Intel) · Windows — installed from: "
        "the network · the USB stick · Binder · did not install",
        "",
        *[line for question in FREE_TEXT for line in (f"| {question} |", "|:---|",
                                                      "| " + "<br>" * FREE_TEXT_LINES + " |", "")],
        "<!-- printed from courseware.workshop (make workshop-guide): a line per block's first objective -->",
        "",
    ])


def notes_markdown(plan: tuple[Block, ...] = PLAN) -> str:
    """docs/workshop/notes-template.md: the shared notes document to copy before the day."""
    blocks = agenda(plan)
    lines = [
        "# toolnode-lab workshop · shared notes",
        "",
        "*For the instructor: copy everything below the line into a shared document the room can "
        "edit (an Etherpad, HackMD/CodiMD or a Google Doc), replace the placeholders in angle "
        f"brackets, and put its link on the wall and in the welcome: {NOTES_LINK}. Replace "
        f"`{REPOSITORY_LINK}` everywhere with the address the room clones, e.g. "
        "`https://github.com/ada/toolnode-lab` (find and replace: it is in every homework link). "
        f"The homework links open each file with `{FILES_PATH}/` after that address, GitHub's form; "
        f"on GitLab, replace `{FILES_PATH}/` with `{GITLAB_FILES_PATH}/`. Printed from "
        "`courseware.workshop` (`make workshop-guide`).*",
        "",
        "---",
        "",
        "## Welcome",
        "",
        f"- These notes: {NOTES_LINK}",
        f"- The course: {REPOSITORY_LINK} (the USB stick has a copy, no network needed)",
        "- The code of conduct: be kind, be patient, ask; tell the instructor or a helper, in person or "
        "privately, if anything makes this room unwelcoming (<the code of conduct's link>)",
        "- Stuck? A red sticky note on your lid (online: write your name under *Stuck* below); done: green.",
        "",
        "## Sign in",
        "",
        "| name | pair with | laptop (Linux / macOS / Windows) | check says ready? |",
        "|---|---|---|---|",
        "| | | | |",
        "",
        "## Today",
        "",
        "| clock | block | minutes |",
        "|---|---|---|",
    ]
    lines += [f"| {clock(b.start)} | {b.title} | {b.minutes} |" for b in blocks]
    lines += ["", "## Stuck (online only: your name and the block)", "", "- ", ""]
    for b in blocks:
        if b.part is None:
            continue
        where = b.highlights or b.part.notebook
        lines += [f"## {clock(b.start)} · {b.title}", "", f"Open `{where}`. Key points:", ""]
        lines += [f"- {render(k)}" for k in b.key_points]
        lines += ["", "Questions (anyone may answer):", "", "- ", ""]
        after = next((x for x in blocks if x.start == b.end and x.kind == "break"), None)
        if after is not None:
            lines += [f"## Minute card · break at {clock(after.start)}", "",
                      "One thing that worked, one thing to change (anonymous is fine):", "", "- ", ""]
    lines += ["## Homework, in this order", "",
              homework_markdown().replace("](../../", f"]({REPOSITORY_LINK}{FILES_PATH}/"), "",
              "## Feedback", "", "The form is on paper (or: <link to an online copy of feedback.md>).", ""]
    return "\n".join(lines)


def typed_steps(blocks: list[Block] | None = None) -> list[tuple[Block, Step]]:
    """Every step typed live, with its block."""
    return [(b, s) for b in (blocks or agenda()) if b.part is not None for s in b.steps if s.mode == "type"]


def _code_lines(cells: list[dict]) -> int:
    return sum(1 for c in cells if c["cell_type"] == "code"
               for line in _source(c).splitlines() if line.strip())


def room_time_markdown(blocks: list[Block] | None = None) -> str:
    """The guide's paragraphs on typing, the opening, the hardest block and the buffer, with the
    plan's numbers."""
    blocks = blocks or agenda()
    block, step = typed_steps(blocks)[0]
    cells = cells_of(block.part.notebook)
    typed = typed_characters([cells[i] for i in step_cells(block, step)])
    _, everything = selected(block.part)
    setup = next(ix for h, ix in sections(cells) if h == "Setup")
    sections_code = [cells[i] for i in everything if i not in setup]
    all_chars, all_lines = typed_characters(sections_code), _code_lines(sections_code)
    heads = ", ".join(f"§{_NUMBERED.match(h).group(1)}" for h in block.sections)
    welcome = next(b for b in blocks if b.kind == "welcome")
    first_break = next(b for b in blocks if b.kind == "break")
    hardest, buffer = hardest_block(blocks), buffer_block(blocks)
    decision = hardest.decisions[0]
    return "\n".join([
        f"**Typing live is priced at a typing rate, not a reading rate.** In {block.title.split(' · ')[0]}, "
        f"{_where_label(block, step.where)} is typed in the room: {typed:,} characters at "
        f"{LIVE_CHARS_PER_MINUTE} characters a minute, all in (say each line as you type it, run it, "
        f"explain it, the room typing along): {typed / LIVE_CHARS_PER_MINUTE:.0f} minutes. The rate is the "
        f"Carpentries' own budget for [participatory live coding]({CARPENTRIES_LIVE_CODING}): Software "
        f"Carpentry's two Python lessons ([inflammation]({LIVE_SOURCE[0]}), [gapminder]({LIVE_SOURCE[1]})) "
        f"give their episodes 490 teaching minutes for 25,128 characters of code typed live (858 lines "
        f"outside the exercises), about 10 words a minute. So the block types only that cell; the rest "
        f"of {heads} is shown from the lesson. Typing all of it ({all_lines} lines, {all_chars:,} "
        f"characters) would take {all_chars / LIVE_CHARS_PER_MINUTE:.0f} minutes on its own.",
        "",
        f"**The opening is {opening_minutes(blocks)} minutes** (realistic: {OPENING[0]}–{OPENING[1]}, "
        f"tested): a {welcome.minutes}-minute welcome, planned item by item (who we are, the "
        f"[code of conduct](code-of-conduct.md), housekeeping, sticky notes, pairs), then lesson 00 with "
        f"every laptop running the pre-flight check. A laptop that fails does not hold the room: it goes "
        f"to a helper under the [failed-laptop protocol](helpers.md#when-a-laptop-fails) and its owner "
        f"works on their pair's laptop.",
        "",
        f"**The hardest block**, {hardest.title} ({clock(hardest.start)}–{clock(hardest.end)}), comes "
        f"right after the first break ({clock(first_break.start)}), when the room is fresh and warmed up "
        f"by what came before; not first (laptops still settling) and not last. If you teach after "
        f"lunch, the opening and lesson 01 take the dip. Halfway through its typing "
        f"({clock(decision[0])}) a cue asks whether half the room has typed that far; if not, paste the "
        f"rest from the lesson (the block's first cut: about {halfway_saves(hardest.saves)} minutes "
        f"back). Block {hardest.title.split(' · ')[0]}'s last {hardest.slack} minutes (from "
        f"{clock(hardest.end - hardest.slack)}) are planned slack, for questions and a typo's fix; there "
        f"early, start the next block. **The buffer** is {buffer.title} "
        f"({buffer.minutes} min, {clock(buffer.start)}–{clock(buffer.end)}), the last block before the "
        f"wrap-up and one the room can do at home: what to cut, in order, is below the table.",
    ])


def helpers_markdown() -> str:
    return (f"Bring **{helpers_needed()} helpers for {LEARNERS} learners**: one for every "
            f"{LEARNERS_PER_HELPER} (the Carpentries recommend one per 8–10 learners, not counting the "
            f"instructor: [host's checklist]({CARPENTRIES_CHECKLISTS})); for another room, divide its "
            f"learners by {LEARNERS_PER_HELPER} and round up. The agenda's lab minutes assume that ratio: "
            "with fewer helpers, stuck pairs wait longer.")


def protocol_markdown() -> str:
    lines = ["A laptop that cannot run the course never holds up the room. From the moment its owner "
             "raises it (a red sticky note, a hand):", ""]
    for minutes, _, text in FAILED_LAPTOP:
        lines.append(f"- **{'By ' + str(minutes) + ' minutes' if minutes else 'At the next break'}**: {text}")
    return "\n".join(lines)


# -- the highlights notebooks ----------------------------------------------------------------------
def highlights_file(part: Part) -> Path:
    return HIGHLIGHTS / Path(part.notebook).name


_MD_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def _relink(markdown: str, source: Path, dest: Path) -> str:
    """A lesson's Markdown with its relative links made relative to the highlights folder; a link
    to one of the lesson's own sections (`#…`) points into the lesson, where the section is."""
    import os

    def one(match: re.Match) -> str:
        target = match.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return match.group(0)
        path, _, anchor = target.partition("#")
        absolute = (source.parent / path).resolve() if path else source
        moved = Path(os.path.relpath(absolute, dest.parent)).as_posix() + (f"#{anchor}" if anchor else "")
        return match.group(1) + moved + match.group(3)
    return _MD_LINK.sub(one, markdown)


def highlights_notebook(block: Block):
    """The highlights notebook of a block: a title cell, the lesson's Setup, the earlier code
    cells the section needs (each group under a note naming its section), the section's cells.

    Cells taken from the lesson keep their id, source, tags and outputs (execution counts are
    renumbered 1..n); cells written here have ids starting `highlights-`."""
    import nbformat

    source_path = ROOT / block.part.notebook
    lesson = nbformat.read(source_path, as_version=4)
    dest = highlights_file(block.part)
    groups = sections(cells_of(block.part.notebook))
    heading_of = {i: h for h, ix in groups for i in ix}
    _, own = selected(block.part)
    setup = next(ix for h, ix in groups if h == "Setup")
    extra = borrowed(block.part)
    number = Path(block.part.notebook).stem[:2]
    link = Path("../../..") / block.part.notebook
    title = nbformat.v4.new_markdown_cell(
        f"# {block.title}\n\n"
        f"Run it all: *Run → Run All Cells*. This notebook holds only what the workshop's block shows: "
        f"[lesson {number}]({link.as_posix()})'s Setup, the earlier cells the section needs, and "
        f"the section itself. The whole lesson is homework.\n\n"
        f"*Generated from the lesson by `make highlights`; running that again also resets this "
        f"notebook.*")
    title.id = "highlights-title"
    cells = [title]
    order = [i for i in setup] + [i for i in extra if i not in setup] + [i for i in own if i not in setup]
    last_heading = None
    for i in order:
        if i in extra and heading_of[i] != last_heading:
            defined = sorted(_names(_source(lesson.cells[i]))[0] & set().union(
                *(_names(_source(lesson.cells[j]))[1] for j in own if lesson.cells[j].cell_type == "code")))
            shown = ", ".join(f"`{n}`" for n in defined) or "what the section uses"
            note = nbformat.v4.new_markdown_cell(
                f"*From section \"{heading_of[i]}\" of the lesson: the code the section below uses "
                f"({shown}). Read it there at home.*")
            note.id = f"highlights-from-{len([c for c in cells if c.id.startswith('highlights-from')]) + 1}"
            cells.append(note)
            last_heading = heading_of[i]
        cell = nbformat.from_dict(json.loads(json.dumps(lesson.cells[i])))
        if cell.cell_type == "markdown":
            cell.source = _relink(cell.source, source_path, dest)
        cells.append(cell)
        if i not in extra:
            last_heading = heading_of[i]
    count = 0
    for cell in cells:
        if cell.cell_type == "code":
            count += 1
            cell.execution_count = count
            for output in cell.get("outputs", []):
                if "execution_count" in output:
                    output["execution_count"] = count
    nb = nbformat.v4.new_notebook(metadata=lesson.metadata)
    nb.cells = cells
    return nb


def highlights_text(block: Block) -> str:
    """The highlights notebook as the file holds it (normalised as every committed notebook)."""
    from courseware.nbtools import _dumps, normalize

    return _dumps(normalize(highlights_notebook(block)))


def highlights_blocks() -> list[Block]:
    return [b for b in agenda() if b.kind == "highlights"]


def highlights_problems() -> list[str]:
    out = []
    wanted = {highlights_file(b.part) for b in highlights_blocks()}
    for block in highlights_blocks():
        path = highlights_file(block.part)
        if not path.exists() or path.read_text(encoding="utf-8") != highlights_text(block):
            out.append(f"{path.relative_to(ROOT)}: the highlights notebook differs from its lesson's cells")
    if HIGHLIGHTS.exists():
        out += [f"{p.relative_to(ROOT)}: no block uses it any more (delete it)"
                for p in sorted(HIGHLIGHTS.glob("*.ipynb")) if p not in wanted]
    return out


def write_highlights() -> list[str]:
    """Write every highlights notebook (and remove those no block uses); the files that changed."""
    HIGHLIGHTS.mkdir(parents=True, exist_ok=True)
    changed = []
    wanted = set()
    for block in highlights_blocks():
        path = highlights_file(block.part)
        wanted.add(path)
        text = highlights_text(block)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path.relative_to(ROOT).as_posix())
    for path in sorted(HIGHLIGHTS.glob("*.ipynb")):
        if path not in wanted:
            path.unlink()
            changed.append(path.relative_to(ROOT).as_posix())
    return changed


# -- every generated file --------------------------------------------------------------------------
def _whole_files() -> dict[Path, callable]:
    return {FACILITATOR: facilitator_markdown, RUN_SHEET: run_sheet_markdown, FEEDBACK: feedback_markdown,
            NOTES: notes_markdown}


def write_facilitator(path: Path = FACILITATOR) -> bool:
    """Write docs/workshop/facilitator.md from `facilitator_markdown()`; True when it changed."""
    return _write(path, facilitator_markdown())


def _write(path: Path, text: str) -> bool:
    changed = not path.exists() or path.read_text(encoding="utf-8") != text
    if changed:
        path.write_text(text, encoding="utf-8")
    return changed


def problems() -> list[str]:
    """Every generated workshop file that is out of date, and every reference that is wrong."""
    out = []
    for path in _regions():
        if not guide_is_current(path):
            out.append(f"{path.relative_to(ROOT)}: a generated region (agenda, demo table, homework, "
                       "late plan, helpers, protocol) moved with the lessons or the plan")
    for path, printer in _whole_files().items():
        if not path.exists() or path.read_text(encoding="utf-8") != printer():
            out.append(f"{path.relative_to(ROOT)}: printed from the plan; its times, steps or cells moved")
    out += highlights_problems()
    return out


def write_all() -> list[str]:
    """Write every generated workshop file; the ones that changed."""
    changed = [p for p in _regions() if write_guide(p)]
    changed += [p for p, printer in _whole_files().items() if _write(p, printer())]
    return [p.relative_to(ROOT).as_posix() for p in changed] + write_highlights()


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m courseware.workshop")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("table", help="print the agenda table")
    sub.add_parser("write-guide", help="write every generated workshop file (guide, script, run sheet, "
                                       "feedback form, notes template, helpers' protocol, highlights)")
    sub.add_parser("highlights", help="write only the highlights notebooks (also resets them)")
    sub.add_parser("stale", help="list what is out of date; exit 1 if anything is")
    args = parser.parse_args(argv)
    if args.command == "table":
        print(markdown_table())
        print(f"\ntotal: {total()} of {LENGTH} minutes")
    elif args.command == "highlights":
        changed = write_highlights()
        print("\n".join(f"wrote {p}" for p in changed) or "highlights notebooks: unchanged")
        print(f"open them in JupyterLab under {HIGHLIGHTS.relative_to(ROOT)}/ and Run All")
    elif args.command == "stale":
        found = problems()
        print("\n".join(found) or "every workshop file is up to date")
        return 1 if found else 0
    else:
        changed = write_all()
        print("\n".join(f"wrote {p}" for p in changed) or "every workshop file is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""toolnode-lab's course machinery: what maintainers and instructors run, not what lessons teach.

Learners import `helpers`; these modules build, time and check the course around it:

- `courseware.course`    — the course map (lessons, labs, tracks) and the one time estimator
- `courseware.derived`   — every file generated from another: `make regen` rewrites them, `make stale`
  lists what is out of date with the command that fixes it
- `courseware.quick`     — `make quick NB=...`: one lesson's notebook, contract tests, lab and the
  consistency checks it can break, in seconds
- `courseware.nbtools`   — execute, normalise and check notebooks (`make notebook`, `make rerun`)
- `courseware.workshop`  — the three-hour agenda and the facilitator's script, from the estimator
- `courseware.compat`    — which taught behaviours hold on which releases (`make compat`, the doctor)
- `courseware.platforms` — the tested platforms and Pythons, the lock read as pip reads it, `make setup`
- `courseware.doctor`    — the pre-flight check a learner or an instructor runs (`make doctor`)

Lesson 00 shows the map, the tracks and the doctor live; nothing else in the lessons imports this
package. Nothing is imported here, so `import courseware` is instant.
"""

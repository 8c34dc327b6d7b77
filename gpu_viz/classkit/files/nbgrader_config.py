# nbgrader's configuration of this course (the instructor's side), written by `gpu-viz class-kit`.
# Run every nbgrader command from this folder (the course directory).
import os

c = get_config()  # noqa: F821  (nbgrader's config loader defines get_config)

# The course: its id (submissions are filed under it) and the exchange the students hand in through.
# On one machine the hub's config sets NBGRADER_EXCHANGE; on Kubernetes it is the shared volume.
c.CourseDirectory.course_id = "{{COURSE_ID}}"
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# The students: `nbgrader db student add NAME` (or `nbgrader db student import students.csv`);
# autograde adds one it does not know.

# Autograding: seconds one cell may run.  Grading a kernel runs it at every launch shape the task
# names (the block reduction: 75 launches, ~5 s in the emulator on one CPU core); a cell that
# runs out of time earns no points and its feedback says so.
c.Execute.timeout = {{CELL_TIMEOUT_S}}
# Seconds one learner kernel may run before it is stopped (on a GPU its child process; in the
# emulator each launch): the kernels nbgrader starts inherit this environment variable.
os.environ.setdefault("{{KERNEL_TIMEOUT_ENV}}", "{{KERNEL_TIMEOUT_S}}")

# The release: nbgrader replaces each "### BEGIN SOLUTION ... ### END SOLUTION" region with this
# stub, so a released answer cell is the learner's cell of the course notebook (`answer = None`, or
# the starting kernel) and carries no solution.
c.ClearSolutions.code_stub = {"python": "# your answer: edit the line(s) above"}

# Collecting: every student's files belong to one Unix user (the hub's user on one machine,
# "jovyan" in the class image), so nbgrader's owner check would warn about every submission.
c.ExchangeCollect.check_owner = False

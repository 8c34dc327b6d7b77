# nbgrader's configuration of a student's server (written by `gpu-viz class-kit`): which course
# the Assignments tab lists, and the exchange it fetches from and submits to.  One machine: the
# hub's config puts this folder on JUPYTER_CONFIG_PATH; the class image installs it as
# <prefix>/etc/jupyter/nbgrader_config.py.
import os

c = get_config()  # noqa: F821  (nbgrader's config loader defines get_config)
c.CourseDirectory.course_id = os.environ.get("NBGRADER_COURSE_ID", "{{COURSE_ID}}")
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# Submit as the hub's user name.  nbgrader otherwise takes the Unix user, which is one and the same
# for every student here: the hub's user on one machine, "jovyan" in the class image (nbgrader
# looks JUPYTERHUB_USER up only for "jovyan").
c.CourseDirectory.student_id = os.environ.get("JUPYTERHUB_USER") or "*"

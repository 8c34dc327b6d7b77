# JupyterHub on one machine for the class kit (written by `gpu-viz class-kit`): the course served
# to a room of students from this computer, for a workshop or to try the kit before Kubernetes.
#
#   cd <kit> && jupyterhub -f hub/jupyterhub_config.py          (README.md: "One machine")
#
# What it is: JupyterHub with its proxy (configurable-http-proxy, from npm) on 127.0.0.1,
# SharedPasswordAuthenticator (every student signs in with their name and the room's password),
# and SimpleLocalProcessSpawner (each student's JupyterLab is a process of the user who runs the
# hub, with its own home folder).  Students' servers are NOT isolated from each other: one Unix
# user runs them all.  For a class you do not know, use Kubernetes (hub/values.yaml).
#
# Settings, from the environment:
#   CLASS_HUB_PASSWORD  the room's password, >= 8 characters (required)
#   CLASS_HUB_USERS     the students allowed, comma-separated (empty: any name)
#   CLASS_HUB_ADMINS    hub admins, comma-separated (optional: grading needs none); they sign in with
#   CLASS_HUB_ADMIN_PASSWORD, 32 characters or more
#   CLASS_HUB_PORT      the port students open (default 8000); CLASS_HUB_IP: the address (default
#                       127.0.0.1: this machine only; 0.0.0.0 serves the room -- put TLS in front)
#   CLASS_HUB_API_PORT, CLASS_HUB_PROXY_API_PORT  the hub's and the proxy's own ports on 127.0.0.1
#                       (default 8081 and 8001)
#   CLASS_HUB_STATE     where the hub keeps its database, cookie secret, proxy pid and the students'
#                       home folders (default: <kit>/hub-state)
#   NBGRADER_EXCHANGE   nbgrader's exchange folder, shared by instructor and students
#                       (default: <CLASS_HUB_STATE>/exchange)
#   CLASS_HUB_SINGLEUSER_ARGS  extra options for every student's server, space-separated
#   CLASS_HUB_ALLOW_ROOT=1     let root run the hub (the students' servers then run as root: only on
#                       a throwaway machine, such as a CI container)
import os
import shlex
from pathlib import Path

c = get_config()  # noqa: F821  (JupyterHub's config loader defines get_config)

HERE = Path(__file__).resolve().parent
KIT = HERE.parent


def _setting(name, default=None):
    value = os.environ.get(name, "").strip()
    return value if value else default


def _names(name):
    return {n.strip() for n in (_setting(name) or "").split(",") if n.strip()}


state = Path(_setting("CLASS_HUB_STATE", str(KIT / "hub-state"))).resolve()
state.mkdir(parents=True, exist_ok=True)
exchange = Path(_setting("NBGRADER_EXCHANGE", str(state / "exchange"))).resolve()
port = int(_setting("CLASS_HUB_PORT", "8000"))
ip = _setting("CLASS_HUB_IP", "127.0.0.1")

# -- the hub and its proxy: the students' address, the hub's API and the proxy's API, all local
c.JupyterHub.bind_url = f"http://{ip}:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(_setting("CLASS_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(_setting('CLASS_HUB_PROXY_API_PORT', '8001'))}"
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
# stop every student's server and the proxy when the hub stops (JupyterHub's defaults, stated)
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# -- who may sign in: a name and the room's password
c.JupyterHub.authenticator_class = "shared-password"
password = _setting("CLASS_HUB_PASSWORD")
if password is None or len(password) < 8:
    raise SystemExit("hub/jupyterhub_config.py: set CLASS_HUB_PASSWORD to the room's password (8 characters or more)")
c.SharedPasswordAuthenticator.user_password = password
admins = _names("CLASS_HUB_ADMINS")
users = _names("CLASS_HUB_USERS")
if admins:
    # an admin signs in with the admin password only (SharedPasswordAuthenticator's rule)
    admin_password = _setting("CLASS_HUB_ADMIN_PASSWORD")
    if admin_password is None or len(admin_password) < 32 or admin_password == password:
        raise SystemExit("hub/jupyterhub_config.py: CLASS_HUB_ADMINS needs CLASS_HUB_ADMIN_PASSWORD, 32 characters or "
                         "more and not the room's password (without it no admin can sign in)")
    c.SharedPasswordAuthenticator.admin_password = admin_password
c.Authenticator.admin_users = admins
if users:
    c.Authenticator.allowed_users = users | admins
else:
    c.Authenticator.allow_all = True

# -- each student's JupyterLab: a local process, its own home, the course's nbgrader settings
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(state / "home" / "{username}")
c.Spawner.default_url = "/lab"
c.Spawner.ip = "127.0.0.1"
c.Spawner.args = shlex.split(_setting("CLASS_HUB_SINGLEUSER_ARGS", ""))
if os.geteuid() == 0:
    # every student's server would run as root: refuse, unless this is a throwaway machine
    if _setting("CLASS_HUB_ALLOW_ROOT") != "1":
        raise SystemExit("hub/jupyterhub_config.py: run the hub as an ordinary user, not root (each student's "
                         "server runs as the user who starts the hub); on a throwaway machine set CLASS_HUB_ALLOW_ROOT=1")
    c.Spawner.args.append("--allow-root")
c.Spawner.environment = {
    "NBGRADER_EXCHANGE": str(exchange),
    # hub/student: the Assignments tab's course and exchange; no instructor panels for students
    "JUPYTER_CONFIG_PATH": str(HERE / "student"),
}
# one machine's worth: a student's server that sat idle is not stopped here (a cull service
# would); the hub stops them all when it stops
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120

"""Settings every test suite starts from: no user's bekc configuration.

bekc reads ``$XDG_CONFIG_HOME/bekc/bekc.conf`` (else ``~/.config/bekc``),
``$BEKC_CONFIG`` and ``$BEKC_LOG`` (docs/cli.md, "Configuration"): a developer's
own file or log must not steer the tests, so they get an empty configuration
directory of their own. Tests of the configuration set these themselves.
"""

import os
import tempfile

os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="bekc-test-config-")
# Readable by the tests that run bekc as another user (setpriv), like a home.
os.chmod(os.environ["XDG_CONFIG_HOME"], 0o755)
for _var in ("BEKC_CONFIG", "BEKC_LOG", "BEKC_BASE_DIR"):
    os.environ.pop(_var, None)

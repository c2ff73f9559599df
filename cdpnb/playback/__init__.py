"""Replay: a recorded trace served back as a live endpoint.

``script`` matches the commands a client sends against the recorded ones (sans-I/O),
``server`` serves them on loopback over a real WebSocket (CDP or WebDriver BiDi), and
``backend`` is ``cdpnb.replay(trace)``, a backend like those of ``cdpnb.launch``.

Nothing is imported here, so that a supervisor can ask ``script.is_replay_url`` without
loading the server. (The room is ``playback`` because ``cdpnb.replay`` is the public
function that starts one; a package of that name would be shadowed by it, or shadow it,
once a submodule is imported.)
"""

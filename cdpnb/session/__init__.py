"""What the supervisor and every protocol driver share: the connection core (``core``:
sends, the fold, subscriptions, the recorder, the connection's life), the driver seam
(``driver``), a call's budget, the arguments of an action, the dialog bridge's contract,
the options and the results a call returns. Nothing here knows one protocol."""

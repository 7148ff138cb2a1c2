"""Several daemons on one store behaving as one.

:mod:`.notices` (pure) packs what a commit told into notices another daemon
can read; :mod:`.relay` sends this daemon's notices and acts on the others'
(wake-ups, ``watch`` events, pause, resume, cancel). Who is in the fleet is
:mod:`readdod.status.roster`; the registry's loop is :mod:`readdod.loops.presence`.
"""

"""What every ``tuning-governor`` command shares: how a command fails and its exit status (:mod:`.errors`),
the AWS clients it makes (:mod:`.aws`), the defaults and choices its arguments name (:mod:`.defaults`) and
its progress bars (:mod:`.progress`). The command itself is :mod:`governor_client.__main__`.

Imports no other room of the client (.importlinter's ``client-rooms``): every room may use it.
"""

"""What both wire protocols share.

The handler interface, configuration, logins, the access log and worker processes.
"""

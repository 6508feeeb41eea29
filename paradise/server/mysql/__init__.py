"""The MySQL wire protocol: mysql-mimic speaks it, paradise routes every statement."""

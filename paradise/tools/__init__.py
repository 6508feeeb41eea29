"""Tools built on the processor: static anonymization of a table into the database
(:mod:`~paradise.tools.anonymize_table`), the bundled demo data
(:mod:`~paradise.tools.demo_data`) and the check of policies against a database's tables
(:mod:`~paradise.tools.check_data`).

Like the risk and utility report (:mod:`paradise.report`) and the file loader
(:mod:`paradise.load`), they use the processor's public interface; the core (processor,
pipeline and what it calls) never imports them.
"""

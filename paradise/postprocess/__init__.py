"""After the database answered: verify k and l per released class, suppress what fails, annotate
the answer (B2: verify, annotate)."""

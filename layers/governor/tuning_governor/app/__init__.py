"""The application layer: one module per use case (an event kind), and the composition root
(``app.wiring``) that builds the adapters they run with. Handlers call this layer only."""

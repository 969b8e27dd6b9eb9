"""End-to-end evidence benchmark: conversations delivered as a product does, context assembled."""

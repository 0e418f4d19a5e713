//! Policy (being written).

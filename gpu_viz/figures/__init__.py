"""Plots that are not traces: the chip and the SM (:mod:`.chip`, notebooks 01-02) and the memory
hierarchy's measurements and occupancy (:mod:`.memory`, notebooks 01, 04, 05).  Every figure
carries a ``Data:`` line saying where its numbers came from."""

"""Plots that are not traces: the chip and the SM (:mod:`.chip`, notebooks 01-02), the memory
hierarchy's measurements and occupancy (:mod:`.memory`, notebooks 01, 04, 05), and the CPU models'
curves (:mod:`.models`, notebooks 04, 12).  Every figure carries a ``Data:`` line saying where its
numbers came from, and fits a 1280x720 slide with text of 18 CSS px or more (:mod:`.style`:
``use()`` for notebooks, ``check(fig)`` to prove it)."""

"""The text layer every page is made of, shared by publishing and the numerics study's rendering
below it: `tables` (a table's cells and its markdown) and `figures` (a figure written as every
figure is, a PNG of 256 colours). May import: pandas, matplotlib; nothing of ampbench."""

"""Other harnesses' trajectories in and ours out: importers turn mini-swe-agent, SWE-agent, ATIF and Inspect
trajectories into run directories with a normal journal, and exporters write our runs as ATIF trajectories
(Harbor, Docent) and Inspect AI eval logs (`inspect view`), so each side's tools read the other's runs."""

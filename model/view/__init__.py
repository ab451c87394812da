"""The Qt-free view model of the timeline: time scale, lanes, level of detail and navigation."""

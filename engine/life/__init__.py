"""Her life in one package: the world she lives in (calendar, daylight, season, weather), computed from date and place."""

"""The catalog: sourced facts about hardware, clouds, models, cost factors and token APIs."""

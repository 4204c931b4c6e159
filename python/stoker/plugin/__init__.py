"""stoker.plugin: DALI's framework plugins spelled as DALI spells them (``stoker.plugin.pytorch``,
``stoker.plugin.base_iterator``)."""

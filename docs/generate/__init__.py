"""The documentation's generated pages, written from the committed studies' ``report.json`` files (never from the
records themselves; nothing here computes a statistic of returns):

- :mod:`docs.generate.docs_results`: ``docs/results/`` (the Results pages, one per committed study);
- :mod:`docs.generate.readme_answer`: the README's answer block (its conditions and the rule that picks each answer);
- :mod:`docs.generate.plain_answer`: the answer in plain words and its figures (``docs/results/figures/answer-*.png``);
- :mod:`docs.generate.paper_budgets`: the Hopper 1M study beside the paper and the 300k study (once it has a report);
- :mod:`docs.generate.answer_key`: ``docs/answer-key.md``;
- :mod:`docs.generate.algorithm_pages`: the results blocks of ``docs/algorithms/*.md``;
- :mod:`docs.generate.report_fields`: how they all read a report.json (one verdict, one estimate name);
- :mod:`docs.generate.files`: where they read and write, and the one way each writes its files or compares them;
- ``td3_paper_table2.yml``: the TD3 paper's Table 2, data.

Run from the repository's root: ``python -m docs.generate`` writes every page, ``python -m docs.generate --check``
(``make docs``) writes nothing and fails naming the pages that differ from a fresh generation; each generator also runs
alone (``python -m docs.generate.answer_key --check``). Not part of the package ``sb3_ablation`` and not a page of the
site (``docs/conf.py`` leaves this folder out)."""

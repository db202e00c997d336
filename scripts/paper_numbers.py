"""Published numbers of the five seed papers, for "paper" columns in reproduction reports.

How this file was made
----------------------
Every value here was to be transcribed by hand from paper text retrieved with the
project's stored-material look-ups (`search` over the "pages", "docs" and "code" corpora;
`find_string` / `find_files` / `read_file` over stored GitHub files). Nothing was filled
from memory. Retrieval date: 2026-11-22.

Outcome: NO result table could be retrieved for any of the five papers. The "pages"
corpus returns only the opening ~2,000 characters of each stored page (title, authors,
abstract, start of the introduction). That held for every copy we found: ar5iv, arXiv
abs/HTML, PMC, the SPIQA raw-tex copy of 2005.00455v3, NeurIPS pages and others. The
experiment sections and tables are never in an excerpt. The GitHub index holds none of
the five papers' full text (checked with exact-phrase look-ups). So every table entry
below is empty and carries a status string saying why. Do not print a "paper" column
from an empty entry.

Absent entries mean "not found in retrieved text", never "zero" or "not reported".

Key format (for when values are added)
--------------------------------------
Each paper is one dict with these keys:
  "paper"         : citation string
  "arxiv"         : arXiv id as retrieved (string), or None if not found
  "retrieved_urls": URLs whose text we did retrieve (front matter only)
  "tables"        : {table_name: {"status": str, "caption_seen": bool, "rows": {...}}}
  "facts"         : numbers/facts stated in the retrieved text (abstract etc.), each
                    with its URL
  "notes"         : oddities, naming differences, what to try next

Row keys inside "rows" are tuples:
  DPGGAN_IMDB  table1/table2 : (method, eps)   e.g. ("DPGGAN", 1.0); a non-private
                                method uses eps=None, e.g. ("GVAE", None)
                                value: {"LCC": float, "TC": float, "CPL": float,
                                        "GINI": float, "REDE": float}   (table1)
  DPDGC        table2        : (dataset, method, setting)  e.g.
                                ("Cora", "DPDGC", "edge_eps1"); setting is one of
                                "edge_eps1", "kneighbor_k1_eps16", "kneighbor_k5_eps16",
                                "kneighbor_k25_eps16", "node_eps16"
  GAP_WEIGHTED table         : (dataset, variant, eps), variant "weighted"/"unweighted"
  DPAR         table         : (dataset, method, level, eps), level "node"/"edge"
Values: {"mean": float, "std": float or None} as printed (percent if the paper prints
percent), keeping the paper's rounding.

Status strings used: "not_retrieved" (text of the table not in any retrieved
excerpt), "figure" (the item is a plot; we transcribe nothing from plots),
"paper_not_found" (the paper itself was not located).
"""

from typing import Any, Dict

NOT_RETRIEVED = "not_retrieved"
FIGURE = "figure"
PAPER_NOT_FOUND = "paper_not_found"


# 1. Yang, Wang, Zhang, Chen, Sun. "Secure Deep Graph Generation with Link Differential
#    Privacy". IJCAI 2021, arXiv 2005.00455 (v3).
DPGGAN_IMDB: Dict[str, Any] = {
    "paper": "Yang et al., Secure Deep Graph Generation with Link Differential Privacy, IJCAI 2021",
    "arxiv": "2005.00455v3",
    "retrieved_urls": [
        "https://ar5iv.labs.arxiv.org/html/2005.00455",
        "https://hf-p-cfw.fyan.top/datasets/google/spiqa/resolve/576140b7eed8e63bc200683edb88986ae092b2e3/"
        "SPIQA_train_val_test-A_raw_tex.zip?download=true:/tmp/tarfile_extract_5thyelr8/"
        "SPIQA_train_val_test-A_raw_tex/2005.00455v3.txt",
        "https://ri.k117.org/papers/secure_deep_graph_generation_with_link_differential_privacy__03187be4",
        "https://www.cl.cam.ac.uk/~ecc73/pub/datasets/iclr/iclr_2021.tar.gz:/tmp/tarfile_extract_yrkd27nq/"
        "iclr_2021/txt_data/jOQbDGngsg8.txt",
    ],
    "tables": {
        "table1": {  # graph statistics LCC, TC, CPL, GINI, REDE (mean absolute differences)
            "status": NOT_RETRIEVED,
            "caption_seen": False,
            "rows": {},
        },
        "table2": {  # degree-distribution / motif similarity, graph classification
            "status": NOT_RETRIEVED,
            "caption_seen": False,
            "rows": {},
        },
    },
    "facts": [
        ("Abstract: experiments on two real-world network datasets.",
         "https://ar5iv.labs.arxiv.org/html/2005.00455"),
        ("Datasets named: DBLP and IMDB (quoted from the paper's text by the page).",
         "https://ri.k117.org/papers/secure_deep_graph_generation_with_link_differential_privacy__03187be4"),
        ("Setup (quoted by the same page): two-layer GCNs with sizes 32 16 for g_mu and g_sigma "
         "(first layer shared); two-layer FNNs with sizes 16 32 for the decoder f; DPGGAN uses another "
         "two-layer GCN with the same sizes for its discriminator. Hardware: four GeForce GTX 1080 GPUs, "
         "12-core 2.2GHz CPU.",
         "https://ri.k117.org/papers/secure_deep_graph_generation_with_link_differential_privacy__03187be4"),
    ],
    "notes": (
        "Only the introduction of the SPIQA raw-tex copy and the ar5iv front matter came back; the "
        "experiment section and both tables never appeared in an excerpt (7 differently worded queries, "
        "including table-environment and caption wording). Epsilon labels (0.1/1/10) are therefore "
        "unconfirmed. An earlier version of the paper was an ICLR 2021 submission titled 'Secure Network "
        "Release with Link Privacy' (OpenReview id jOQbDGngsg8); its tables may differ from the IJCAI "
        "version and must not be mixed with it. The ar5iv abstract spells the model 'DPGGan'."
    ),
}


# 2. Chien, Chen, Pan, Li, Ozgur, Milenkovic. "Differentially Private Decoupled Graph
#    Convolutions for Multigranular Topology Protection". NeurIPS 2023, arXiv 2307.06422.
DPDGC: Dict[str, Any] = {
    "paper": "Chien et al., Differentially Private Decoupled Graph Convolutions for Multigranular "
             "Topology Protection, NeurIPS 2023",
    "arxiv": "2307.06422",
    "retrieved_urls": [
        "https://ar5iv.labs.arxiv.org/html/2307.06422",
        "http://papers.nips.cc/paper_files/paper/2023/hash/8e3db2040672d85fd12e6313945594fe-Abstract-Conference.html",
        "https://neurips.cc/virtual/2023/poster/71012",
    ],
    "tables": {
        "table2": {  # test accuracy: edge eps=1, k-neighbor k=1/5/25 eps=16, node eps=16
            "status": NOT_RETRIEVED,
            "caption_seen": False,
            "rows": {},
        },
    },
    "facts": [
        ("Abstract: experiments on seven node classification benchmarking and illustrative synthetic "
         "datasets (the excerpt is cut off at 'illustrative synt...').",
         "https://ar5iv.labs.arxiv.org/html/2307.06422"),
    ],
    "notes": (
        "Table 2 not in any retrieved excerpt. Oddity: the abstract says SEVEN benchmark datasets, "
        "while our brief lists eight (Cora, CiteSeer, PubMed, Chameleon, Squirrel, Computers, Photo, "
        "Facebook). Check which seven before labelling rows. The official repository README "
        "(GitHub, 'DPDGC ... official repository') is stored but is not the paper text and was not used."
    ),
}


# 3. "Investigating Differentially Private GNNs with Weighted Aggregations" (GAP weighting).
GAP_WEIGHTED: Dict[str, Any] = {
    "paper": "Investigating Differentially Private GNNs with Weighted Aggregations",
    "arxiv": None,
    "retrieved_urls": [],
    "tables": {
        "weighted_vs_unweighted": {  # eps 1/2/4/8 per dataset
            "status": PAPER_NOT_FOUND,
            "caption_seen": False,
            "rows": {},
        },
    },
    "facts": [],
    "notes": (
        "No stored page, document or repository matched this title (title query on pages and docs, "
        "plus a paraphrase query). The arXiv id is unknown. The nearest hits were the GAP paper itself "
        "(Sajadmanesh et al., arXiv 2203.00949, USENIX Security 2023), which is a different paper. "
        "Its abstract says it uses three real-world graph datasets."
    ),
}


# 4. Zhang, Lee, Ma, Lou, Yang, Xiong. "DPAR: Decoupled Graph Neural Networks with
#    Node-Level Differential Privacy" (Decoupled GNN with Differentially Private
#    Approximate Personalized PageRank). WWW 2024, arXiv 2210.04442 (v3, 15 Mar 2024).
DPAR: Dict[str, Any] = {
    "paper": "Zhang et al., DPAR: Decoupled Graph Neural Networks with Node-Level Differential Privacy, "
             "WWW 2024",
    "arxiv": "2210.04442v3",
    "retrieved_urls": [
        "https://arxiv.longhoe.net/html/2210.04442v3",
        "https://pmc.ncbi.nlm.nih.gov/articles/PMC11660558",
        "https://researchtrend.ai/papers/2210.04442",
    ],
    "tables": {
        "accuracy": {  # DPAR variants, GAP, DP-MLP at eps 1/4/8, node/edge level
            "status": NOT_RETRIEVED,
            "caption_seen": False,
            "rows": {},
        },
    },
    "facts": [
        ("Published as Proc. Int World Wide Web Conf. 2024 May 13;2024:1170-1181, doi 10.1145/3589334.3645531 "
         "(PMC author manuscript PMC11660558).",
         "https://pmc.ncbi.nlm.nih.gov/articles/PMC11660558"),
        ("arXiv v1 dated 10 October 2022; v3 dated 15 Mar 2024.",
         "https://researchtrend.ai/papers/2210.04442"),
    ],
    "notes": (
        "The title in our brief ('Decoupled GNN with Differentially Private Approximate Personalized "
        "PageRank') is the method name; the published title is 'DPAR: Decoupled Graph Neural Networks with "
        "Node-Level Differential Privacy'. The arXiv id is from 2022 (2210.04442), not ~2023. The results "
        "tables never appeared in an excerpt. PMC serves some articles' tables as separate pages "
        "(/articles/PMC.../table/...), but no table page of PMC11660558 came back for three table-worded "
        "queries. Variant names (EM/GM etc.) were not seen in retrieved text."
    ),
}


# 5. Huang, Yin, Chien, Wei, Li. "Differentially Private Relational Learning with
#    Entity-level Privacy Guarantees". arXiv 2506.08347 (v2, 12 Jun 2025).
RELATIONAL_ENTITY_DP: Dict[str, Any] = {
    "paper": "Huang et al., Differentially Private Relational Learning with Entity-level Privacy Guarantees",
    "arxiv": "2506.08347v2",
    "retrieved_urls": [
        "https://arxiv.org/abs/2506.08347",
        "https://www.sciencestack.ai/paper/2506.08347",
        "https://aitopics.org/doc/conferences:94B1B291",
    ],
    "tables": {
        "figure2_eps_vs_T": {  # adaptive FREQ-CLIP vs standard clipping; K=5, n=1e6, m=5e6, ...
            "status": FIGURE,
            "caption_seen": False,
            "rows": {},
        },
    },
    "facts": [
        ("arXiv v1 submitted 10 Jun 2025, v2 12 Jun 2025.", "https://arxiv.org/abs/2506.08347"),
        ("Code: https://github.com/Graph-COM/Node_DP (named in the abstract).",
         "https://www.catalyzex.com/paper/differentially-private-relational-learning"),
        ("Listed under Neural Information Processing Systems.", "https://aitopics.org/doc/conferences:94B1B291"),
    ],
    "notes": (
        "Figure 2 is a plot: per the brief nothing is transcribed from it. The figure's caption and the "
        "text around it were not in any retrieved excerpt, so no epsilon value stated in the text could be "
        "recorded either. The parameters in our brief (K=5, n=1e6, m=5e6, gamma=1e-5, sigma=0.5, k_neg=4) "
        "are unconfirmed from paper text."
    ),
}


ALL_PAPERS: Dict[str, Dict[str, Any]] = {
    "dpggan": DPGGAN_IMDB,
    "dpdgc": DPDGC,
    "gap_weighted": GAP_WEIGHTED,
    "dpar": DPAR,
    "relational": RELATIONAL_ENTITY_DP,
}

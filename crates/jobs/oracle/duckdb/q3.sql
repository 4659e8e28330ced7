-- q3, local item suggestion: every (auction, seller) pair of a category-10 auction whose seller
-- lives in OR, ID or CA (a regular join: all matches, whatever their times).
SELECT P.name, P.city, P.state, A.id
FROM auction A JOIN person P ON A.seller = P.id
WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')
